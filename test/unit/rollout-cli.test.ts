import assert from 'node:assert/strict';
import { renderRolloutStatus, watchEnd } from '../../src/cli/rollout-command.js';
import { renderHistory, undoTarget } from '../../src/cli/rollout-history.js';
import type { InPlaceRollout } from '../../src/controllers/rollout/types.js';

const r = (status: InPlaceRollout['status'], generation = 1): InPlaceRollout => ({
  metadata: { name: 'roll', namespace: 'shop', generation },
  spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' } },
  status,
});

describe('inplacectl rollout status', () => {
  it('prints phase, revisions, counts, pods in flight and failures with exit codes', () => {
    const text = renderRolloutStatus(
      r({ observedGeneration: 1, phase: 'Failed', currentRevision: 'web-a', updateRevision: 'web-b', replicas: 6, updatedReplicas: 2, readyReplicas: 6, podsInFlight: ['web-3'], failures: [{ pod: 'web-3', container: 'app', reason: 'RolledBack: exited', exitCode: 3 }], coordinator: 'n1' }),
    );
    assert.match(text, /^shop\/roll: Failed/);
    assert.match(text, /web-a -> web-b/);
    assert.match(text, /2\/6 updated, 6 ready/);
    assert.match(text, /in flight\s+web-3/);
    assert.match(text, /pod web-3 container app: RolledBack: exited \(exit code 3\)/);
  });

  it('--watch ends on Succeeded (0), Failed or a failure pause (1), never on a status of an older spec', () => {
    assert.equal(watchEnd(r({ observedGeneration: 1, phase: 'Succeeded' })), 0);
    assert.equal(watchEnd(r({ observedGeneration: 1, phase: 'Failed' })), 1);
    assert.equal(watchEnd(r({ observedGeneration: 1, phase: 'Paused', failures: [{ pod: 'p', reason: 'x' }] })), 1);
    assert.equal(watchEnd(r({ observedGeneration: 1, phase: 'Paused' })), undefined);
    assert.equal(watchEnd(r({ observedGeneration: 1, phase: 'Succeeded' }, 2)), undefined);
  });
});

describe('inplacectl rollout history|undo (rollout-history.ts)', () => {
  const rev = (revision: number, hash: string, image: string) => ({ name: `web-${hash}`, hash, revision, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'app', image }] } } });
  const pod = (name: string, revisionHash: string) => ({ name, uid: name, revisionHash, deleting: false, ready: true, containers: [], labels: {}, annotations: {} });

  it('history: each revision, oldest first, with its images and the pods that run it now; the target marked', () => {
    const text = renderHistory([rev(3, 'tb', 'app:v2'), rev(1, 'aaa', 'app:v1')], [pod('web-1', 'aaa'), pod('web-0', 'tb'), pod('web-2', 'aaa')], 'tb');
    const lines = text.split('\n');
    assert.match(lines[0], /^REVISION\s+HASH\s+IMAGES\s+PODS$/);
    assert.match(lines[1], /^1\s+aaa\s+app=app:v1\s+2: web-1 web-2$/);
    assert.match(lines[2], /^3\s+tb \(target\)\s+app=app:v2\s+1: web-0$/);
  });

  it('undo: a held Deployment goes back to the template of its one ReplicaSet (without its hash); anywhere else kubectl undo is named', () => {
    const d = (held: boolean) => ({ metadata: { name: 'web', uid: 'd1', annotations: held ? { 'inplace-agent.io/hold': 'paused' } : {} }, spec: { paused: held, selector: {}, template: {} } });
    const rs = { metadata: { name: 'web-aaa', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'd1', controller: true }] }, spec: { replicas: 3, selector: {}, template: { metadata: { labels: { app: 'web', 'pod-template-hash': 'aaa' } }, spec: { containers: [{ name: 'app', image: 'app:v1' }] } } } };
    const held = undoTarget('Deployment', 'web', d(true) as never, [rs] as never);
    assert.ok('template' in held);
    assert.deepEqual(held.template.metadata?.labels, { app: 'web' });
    assert.equal(held.template.spec?.containers?.[0].image, 'app:v1');
    const refused = (x: ReturnType<typeof undoTarget>) => ('refuse' in x ? x.refuse : '');
    assert.match(refused(undoTarget('Deployment', 'web', d(false) as never, [rs] as never)), /not held: kubectl rollout undo deployment\/web is carried out in place/);
    assert.match(refused(undoTarget('StatefulSet', 'db', undefined, [])), /kubectl rollout undo statefulset\/db is carried out in place/);
    assert.match(refused(undoTarget('Deployment', 'web', d(true) as never, [rs] as never, 1)), /1 pods already run or are being taken to its new template/);
  });
});
