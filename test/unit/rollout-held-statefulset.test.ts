// A StatefulSet left on RollingUpdate, as the planner sees it: held at admission (its partition at its replicas,
// the user's recorded in an annotation), it is rolled out in place within the user's partition; at rest it is
// Succeeded; with a change its controller is rolling (not held) it is refused, naming the hold policy.
import assert from 'node:assert/strict';
import { planRollout, REASON, type PodView, type WorkloadView } from '../../src/controllers/rollout/plan.js';
import type { PodTemplate } from '../../src/controllers/rollout/template-diff.js';
import type { InPlaceRollout } from '../../src/controllers/rollout/types.js';
import { succeededNow } from '../../src/controllers/rollout/workloads/deployment-round.js';
import { DAEMONSET_HOLD_ANNOTATION, PARTITION_HOLD_ANNOTATION, partitionRelease, strategyRelease } from '../../src/controllers/rollout/workloads/hold.js';

const NOW = Date.parse('2026-12-02T12:00:00Z');
const tpl = (image: string): PodTemplate => ({ metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'app', image }] } });
const sts = (over: Partial<WorkloadView>): WorkloadView => ({ kind: 'StatefulSet', name: 'db', uid: 's1', generation: 2, observedGeneration: 2, updateStrategy: 'RollingUpdate', desired: 3, updateRevision: 'db-b', currentRevision: 'db-a', ...over });
const pod = (i: number, rev = 'db-a', image = 'app:v1'): PodView => ({
  name: `db-${i}`,
  uid: `u${i}`,
  nodeName: 'n1',
  ordinal: i,
  revisionHash: rev,
  deleting: false,
  ready: true,
  readySinceMs: NOW - 60_000,
  containers: [{ name: 'app', image }],
  labels: { app: 'db', 'controller-revision-hash': rev },
  annotations: {},
});
const rollout: InPlaceRollout = { metadata: { name: 'db', namespace: 'ns', uid: 'r1', generation: 1 }, spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db' }, prewarm: false, maxUnavailable: 3 } };
const plan = (w: WorkloadView, pods = [0, 1, 2].map((i) => pod(i))) =>
  planRollout({ rollout, workload: w, revisions: [{ name: 'db-a', hash: 'db-a', revision: 1, template: tpl('app:v1') }, { name: 'db-b', hash: 'db-b', revision: 2, template: tpl('app:v2') }], pods, restarts: [], nowMs: NOW });

describe('rollout of a StatefulSet on RollingUpdate', () => {
  it("held: updated in place, within the user's partition (2 of 3: only db-2)", () => {
    const p = plan(sts({ heldPartition: 2 }));
    assert.deepEqual(p.actions.map((a) => a.kind === 'restart' && a.pod), ['db-2']);
  });

  it('at rest (currentRevision == updateRevision, every pod on it): Succeeded, nothing done', () => {
    const p = plan(sts({ currentRevision: 'db-b' }), [0, 1, 2].map((i) => pod(i, 'db-b', 'app:v2')));
    assert.equal(p.status.phase, 'Succeeded');
    assert.deepEqual(p.actions, []);
  });

  it('the hold is released only on a Succeeded of the template as it is now, never on one a waiting plan carries over', () => {
    const done = { ...rollout, status: { phase: 'Succeeded' as const, updateRevision: 'db-a', observedGeneration: 1 } };
    // The controller has not observed the new template yet: the plan waits, and its status is the last one.
    const waiting = planRollout({ rollout: done, workload: sts({ heldPartition: 0, generation: 3 }), revisions: [], pods: [0, 1, 2].map((i) => pod(i)), restarts: [], nowMs: NOW });
    assert.equal(waiting.status.phase, 'Succeeded', 'carried over');
    assert.equal(succeededNow(sts({ heldPartition: 0, generation: 3 }), waiting), false);
    // Listed, but not yet the update revision the StatefulSet names.
    assert.equal(succeededNow(sts({ heldPartition: 0, updateRevision: 'db-c' }), { actions: [], status: { phase: 'Succeeded', updateRevision: 'db-b' } }), false);
    assert.equal(succeededNow(sts({ heldPartition: 0 }), { actions: [], status: { phase: 'Succeeded', updateRevision: 'db-b' } }), true);
  });

  it("a held DaemonSet: released only on a Succeeded of its template's revision, its rolling update put back as recorded", () => {
    const ds: WorkloadView = { kind: 'DaemonSet', name: 'agent', uid: 'd1', generation: 2, observedGeneration: 2, updateStrategy: 'OnDelete', desired: 3, heldStrategy: 'maxUnavailable=25%,maxSurge=0' };
    assert.equal(succeededNow(ds, { actions: [], status: { phase: 'Succeeded', updateRevision: 'old' } }, 'new'), false, 'carried over from the last template');
    assert.equal(succeededNow(ds, { actions: [], status: { phase: 'Succeeded', updateRevision: 'new' } }, 'new'), true);
    assert.deepEqual(strategyRelease('maxUnavailable=25%,maxSurge=0'), [
      { op: 'test', path: `/metadata/annotations/${DAEMONSET_HOLD_ANNOTATION.replace('/', '~1')}`, value: 'maxUnavailable=25%,maxSurge=0' },
      { op: 'remove', path: `/metadata/annotations/${DAEMONSET_HOLD_ANNOTATION.replace('/', '~1')}` },
      { op: 'replace', path: '/spec/updateStrategy', value: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: 0 } } },
    ]);
  });

  it('a held StatefulSet released: its partition put back; switched to OnDelete by its user meanwhile, only the annotation removed', () => {
    const ann = `/metadata/annotations/${PARTITION_HOLD_ANNOTATION.replace('/', '~1')}`;
    assert.deepEqual(partitionRelease(2), [
      { op: 'test', path: ann, value: '2' },
      { op: 'remove', path: ann },
      { op: 'replace', path: '/spec/updateStrategy/rollingUpdate/partition', value: 2 },
    ]);
    assert.deepEqual(partitionRelease(0, true), [
      { op: 'test', path: ann, value: '0' },
      { op: 'remove', path: ann },
    ]);
  });

  it('a DaemonSet on RollingUpdate at rest (after its release): Succeeded, not refused', () => {
    const ds: WorkloadView = { kind: 'DaemonSet', name: 'db', uid: 'd1', generation: 2, observedGeneration: 2, updateStrategy: 'RollingUpdate', desired: 3, atRest: true, template: tpl('app:v2') };
    const p = planRollout({ rollout, workload: ds, revisions: [{ name: 'db-b', hash: 'db-b', revision: 2, template: tpl('app:v2') }], pods: [0, 1, 2].map((i) => pod(i, 'db-b', 'app:v2')), restarts: [], nowMs: NOW });
    assert.equal(p.status.phase, 'Succeeded', p.status.message);
    assert.equal(planRollout({ rollout, workload: { ...ds, atRest: false }, revisions: [], pods: [], restarts: [], nowMs: NOW }).status.conditions?.[0].reason, REASON.notOnDelete);
  });

  it('a change its controller rolls (not held): refused, naming the hold policy', () => {
    const p = plan(sts({}));
    assert.equal(p.status.conditions?.[0].reason, REASON.notOnDelete);
    assert.match(p.status.message ?? '', /workload-hold-policy\.yaml/);
    assert.deepEqual(p.actions, []);
  });
});
