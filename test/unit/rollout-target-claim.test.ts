import assert from 'node:assert/strict';
import { planRollout, REASON } from '../../src/controllers/rollout/plan.js';
import { targetHolder } from '../../src/controllers/rollout/target-claim.js';
import type { InPlaceRollout } from '../../src/controllers/rollout/types.js';

const ipr = (name: string, created: string, over: { ns?: string; kind?: 'StatefulSet' | 'DaemonSet'; target?: string; deleting?: boolean } = {}): InPlaceRollout => ({
  metadata: { name, namespace: over.ns ?? 'ns', uid: `uid-${name}`, generation: 1, creationTimestamp: created, ...(over.deleting ? { deletionTimestamp: '2026-12-01T12:10:00Z' } : {}) },
  spec: { targetRef: { apiVersion: 'apps/v1', kind: over.kind ?? 'StatefulSet', name: over.target ?? 'web' } },
});

describe('one InPlaceRollout per workload (target-claim)', () => {
  const first = ipr('first', '2026-12-01T12:00:00Z');
  const second = ipr('second', '2026-12-01T12:05:00Z');

  it('the oldest rollout naming a workload holds it; a later one sees the first as holder', () => {
    const all = [second, first];
    assert.equal(targetHolder(first, all), first);
    assert.equal(targetHolder(second, all), first);
  });

  it('same creation second: the name decides, the same way for every coordinator', () => {
    const a = ipr('a', '2026-12-01T12:00:00Z');
    const b = ipr('b', '2026-12-01T12:00:00Z');
    assert.equal(targetHolder(b, [a, b]), a);
    assert.equal(targetHolder(b, [b, a]), a);
    assert.equal(targetHolder(a, [b, a]), a);
  });

  it('another workload, kind or namespace is no rival', () => {
    const all = [first, ipr('ds', '2026-12-01T11:00:00Z', { kind: 'DaemonSet' }), ipr('db', '2026-12-01T11:00:00Z', { target: 'db' }), ipr('other', '2026-12-01T11:00:00Z', { ns: 'other' })];
    assert.equal(targetHolder(first, all), first);
  });

  it('a rollout being deleted gives the workload up at once', () => {
    const gone = ipr('first', '2026-12-01T12:00:00Z', { deleting: true });
    assert.equal(targetHolder(second, [gone, second]), second);
  });

  it('the planner refuses a held workload in the status, naming the holder, and plans nothing', () => {
    const p = planRollout({ rollout: second, heldBy: 'first', revisions: [], pods: [], restarts: [], nowMs: Date.parse('2026-12-01T12:06:00Z') });
    assert.deepEqual(p.actions, []);
    assert.equal(p.status.phase, 'Failed');
    assert.equal(p.status.conditions?.find((c) => c.type === 'Progressing')?.reason, REASON.targetInUse);
    assert.match(p.status.message ?? '', /StatefulSet web is already rolled out by InPlaceRollout first/);
  });
});
