import assert from 'node:assert/strict';
import { planRollout, prewarmName, REASON, resolveMaxUnavailable, restartName, type PlanInput, type PodView, type RestartView, type RevisionView, type WorkloadView } from '../../src/controllers/rollout/plan.js';
import { diffTemplates, type PodTemplate } from '../../src/controllers/rollout/template-diff.js';
import { prewarmFromRecords } from '../../src/controllers/rollout/observe.js';
import type { ImagePrewarm, NodePrewarm } from '../../src/controllers/image-prewarm/types.js';
import type { InPlaceRollout, InPlaceRolloutSpec } from '../../src/controllers/rollout/types.js';

const NOW = Date.parse('2026-12-01T12:00:00Z');
const tpl = (images: Record<string, string>, extra: { labels?: Record<string, string>; env?: string } = {}): PodTemplate => ({
  metadata: { labels: { app: 'web', ...(extra.labels ?? {}) } },
  spec: {
    containers: Object.entries(images).map(([name, image]) => ({ name, image, ...(extra.env && name === 'app' ? { env: [{ name: 'X', value: extra.env }] } : {}) })),
    terminationGracePeriodSeconds: 5,
  },
});
const V1 = { app: 'app:v1', side: 'side:1', log: 'log:1' };
const V2 = { ...V1, app: 'app:v2' };
const rev = (name: string, revision: number, template: PodTemplate): RevisionView => ({ name, hash: name, revision, template });
const sts = (over: Partial<WorkloadView> = {}): WorkloadView => ({ kind: 'StatefulSet', name: 'web', uid: 'w1', generation: 2, observedGeneration: 2, updateStrategy: 'OnDelete', desired: 6, updateRevision: 'web-b', ...over });
const pod = (i: number, over: Partial<PodView> = {}): PodView => ({
  name: `web-${i}`,
  uid: `u${i}`,
  nodeName: `n${i % 3}`,
  ordinal: i,
  revisionHash: 'web-a',
  deleting: false,
  ready: true,
  readySinceMs: NOW - 60_000,
  containers: Object.entries(V1).map(([name, image]) => ({ name, image })),
  labels: { app: 'web', 'controller-revision-hash': 'web-a' },
  annotations: {},
  ...over,
});
const updatedPod = (i: number, over: Partial<PodView> = {}) => pod(i, { revisionHash: 'web-b', containers: Object.entries(V2).map(([name, image]) => ({ name, image })), labels: { app: 'web', 'controller-revision-hash': 'web-b' }, ...over });
const ipr = (spec: Partial<InPlaceRolloutSpec> = {}): InPlaceRollout => ({
  metadata: { name: 'roll', namespace: 'ns', uid: 'abcdef0123', generation: 1 },
  spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' }, prewarm: false, ...spec },
});
const input = (over: Partial<PlanInput> = {}): PlanInput => ({
  rollout: ipr(),
  workload: sts(),
  revisions: [rev('web-a', 1, tpl(V1)), rev('web-b', 2, tpl(V2))],
  pods: [0, 1, 2, 3, 4, 5].map((i) => pod(i)),
  restarts: [],
  nowMs: NOW,
  ...over,
});
const cr = (podName: string, phase: RestartView['phase'], over: Partial<RestartView> = {}): RestartView => ({ name: restartName('roll', podName, 2), pod: podName, revisionHash: 'web-b', revisionNumber: 2, phase, ...over });
const kinds = (p: ReturnType<typeof planRollout>) => p.actions.map((a) => `${a.kind}:${'pod' in a ? a.pod : a.name}`);

describe('rollout planner', () => {
  it('refuses a target without OnDelete, saying why, and does nothing', () => {
    const p = planRollout(input({ workload: sts({ updateStrategy: 'RollingUpdate' }) }));
    assert.equal(p.actions.length, 0);
    assert.equal(p.status.phase, 'Failed');
    assert.equal(p.status.conditions?.[0].reason, REASON.notOnDelete);
    assert.match(p.status.message ?? '', /RollingUpdate.*recreate the pods itself/);
  });

  it('a missing target fails naming it', () => {
    const p = planRollout(input({ workload: undefined }));
    assert.equal(p.status.phase, 'Failed');
    assert.match(p.status.message ?? '', /StatefulSet web not found/);
  });

  it('waits while the controller has not observed the template change', () => {
    const p = planRollout(input({ workload: sts({ observedGeneration: 1 }) }));
    assert.deepEqual(p.actions, []);
    assert.match(p.status.message ?? '', /observe generation 2/);
  });

  it('StatefulSet: highest ordinal first, one at a time with maxUnavailable 1, only the changed container', () => {
    const p = planRollout(input());
    assert.deepEqual(kinds(p), ['restart:web-5']);
    const a = p.actions[0];
    assert.ok(a.kind === 'restart');
    assert.deepEqual(a.containers, [{ name: 'app', image: 'app:v2' }]);
    assert.match(a.name, /^roll-web-5-[0-9a-f]{10}-r2$/);
    assert.equal(a.name, restartName('roll', 'web-5', 2));
    assert.equal(p.status.phase, 'Progressing');
    assert.deepEqual(p.status.podsInFlight, ['web-5']);
    assert.equal(p.status.updateRevision, 'web-b');
    assert.equal(p.status.currentRevision, 'web-a');
  });

  it('maxUnavailable 3 starts three, highest ordinals', () => {
    const p = planRollout(input({ rollout: ipr({ maxUnavailable: 3 }) }));
    assert.deepEqual(kinds(p), ['restart:web-5', 'restart:web-4', 'restart:web-3']);
  });

  it('percent maxUnavailable is of the desired pods, rounded down, at least 1', () => {
    assert.equal(resolveMaxUnavailable('50%', 6), 3);
    assert.equal(resolveMaxUnavailable('10%', 6), 1);
    assert.equal(resolveMaxUnavailable(undefined, 6), 1);
    assert.equal(resolveMaxUnavailable(2, 6), 2);
  });

  it('counts pods already unavailable (not ready, missing) against the budget, as the stock controllers do', () => {
    const notReady = planRollout(input({ rollout: ipr({ maxUnavailable: 2 }), pods: [0, 1, 2, 3, 4, 5].map((i) => pod(i, { ready: i !== 0 })) }));
    assert.deepEqual(kinds(notReady), ['restart:web-5']);
    const missing = planRollout(input({ pods: [0, 1, 2, 3, 4].map((i) => pod(i)) }));
    assert.deepEqual(kinds(missing), []);
    const young = planRollout(input({ rollout: ipr({ strategy: { minReadySeconds: 120 } }) }));
    assert.deepEqual(kinds(young), [], 'pods Ready for less than minReadySeconds are not available yet');
  });

  it('a pod on no node is left behind (no agent could update it) and counted unavailable', () => {
    const p = planRollout(input({ rollout: ipr({ maxUnavailable: 2 }), pods: [0, 1, 2, 3, 4, 5].map((i) => pod(i, i === 5 ? { nodeName: undefined, ready: false } : {})) }));
    assert.deepEqual(kinds(p), ['restart:web-4']);
    assert.equal(p.status.phase, 'Progressing');
    assert.match(p.status.message ?? '', /1 not on a node yet \(web-5\)/);
  });

  it('a pod in flight holds the budget; a running ContainerRestart is never doubled', () => {
    const p = planRollout(input({ restarts: [cr('web-5', 'Running')] }));
    assert.deepEqual(kinds(p), []);
    assert.deepEqual(p.status.podsInFlight, ['web-5']);
    const p3 = planRollout(input({ rollout: ipr({ maxUnavailable: 3 }), restarts: [cr('web-5', 'Running')] }));
    assert.deepEqual(kinds(p3), ['restart:web-4', 'restart:web-3']);
  });

  it('after success the pod is relabelled to the new revision, still in flight until then', () => {
    const p = planRollout(input({ pods: [0, 1, 2, 3, 4, 5].map((i) => (i === 5 ? pod(5, { containers: Object.entries(V2).map(([name, image]) => ({ name, image })) }) : pod(i))), restarts: [cr('web-5', 'Succeeded')] }));
    assert.deepEqual(kinds(p), ['relabel:web-5']);
    const a = p.actions[0];
    assert.ok(a.kind === 'relabel');
    assert.deepEqual(a.labels, { 'controller-revision-hash': 'web-b' });
    assert.deepEqual(p.status.podsInFlight, ['web-5']);
  });

  it('a pod in flight frees the budget once its new containers run ready and it is available, before its ContainerRestart ends', () => {
    const others = [0, 1, 2, 3, 4].map((i) => pod(i));
    const v2 = Object.entries(V2).map(([name, image]) => ({ name, image }));
    const statuses = (images: Record<string, string>, ready = true) => Object.entries(images).map(([name, image]) => ({ name, image, ready }));
    const running = [cr('web-5', 'Running')];
    // Still Ready with the old containers (the agent has not drained it yet): it holds the budget.
    assert.deepEqual(kinds(planRollout(input({ pods: [...others, pod(5, { statuses: statuses(V1) })], restarts: running }))), []);
    // Patched, the kubelet still reports the old image: holds it.
    assert.deepEqual(kinds(planRollout(input({ pods: [...others, pod(5, { containers: v2, statuses: statuses(V1) })], restarts: running }))), []);
    // New container ready, but the pod not Ready yet (its readiness gate): holds it.
    assert.deepEqual(kinds(planRollout(input({ pods: [...others, pod(5, { containers: v2, statuses: statuses(V2), ready: false })], restarts: running }))), []);
    // Ready again with the new containers: the next pod starts, web-5 still in flight until its update ends.
    const next = planRollout(input({ pods: [...others, pod(5, { containers: v2, statuses: statuses(V2), readySinceMs: NOW - 100 })], restarts: running }));
    assert.deepEqual(kinds(next), ['restart:web-4']);
    assert.deepEqual(next.status.podsInFlight, ['web-5', 'web-4']);
    // With minReadySeconds: not before the pod was Ready that long; the plan says when to look again.
    const minReady = ipr({ strategy: { minReadySeconds: 2 } });
    const early = planRollout(input({ rollout: minReady, pods: [...others, pod(5, { containers: v2, statuses: statuses(V2), readySinceMs: NOW - 500 })], restarts: running }));
    assert.deepEqual(kinds(early), []);
    assert.equal(early.wakeAtMs, NOW + 1500);
    const late = planRollout(input({ rollout: minReady, pods: [...others, pod(5, { containers: v2, statuses: statuses(V2), readySinceMs: NOW - 2000 })], restarts: running }));
    assert.deepEqual(kinds(late), ['restart:web-4']);
    // Succeeded and back: relabelled, and the next pod starts in the same round.
    assert.deepEqual(kinds(planRollout(input({ pods: [...others, pod(5, { containers: v2, statuses: statuses(V2) })], restarts: [cr('web-5', 'Succeeded')] }))), ['relabel:web-5', 'restart:web-4']);
  });

  it('an updated pod that is not ready yet holds the budget; once ready the next ordinal goes', () => {
    const pods = [0, 1, 2, 3, 4].map((i) => pod(i));
    const notYet = planRollout(input({ pods: [...pods, updatedPod(5, { ready: false })], restarts: [cr('web-5', 'Succeeded')] }));
    assert.deepEqual(kinds(notYet), []);
    const next = planRollout(input({ pods: [...pods, updatedPod(5)], restarts: [cr('web-5', 'Succeeded')] }));
    assert.deepEqual(kinds(next), ['restart:web-4']);
    assert.equal(next.status.updatedReplicas, 1);
  });

  it('partition: ordinals below it keep the old revision, and the rollout is then Succeeded', () => {
    const p = planRollout(input({ rollout: ipr({ partition: 3 }), pods: [0, 1, 2].map((i) => pod(i)).concat([3, 4, 5].map((i) => updatedPod(i))) }));
    assert.deepEqual(kinds(p), []);
    assert.equal(p.status.phase, 'Succeeded');
    assert.match(p.status.message ?? '', /partition 3/);
    const p0 = planRollout(input({ rollout: ipr({ partition: 0 }), pods: [0, 1, 2].map((i) => pod(i)).concat([3, 4, 5].map((i) => updatedPod(i))) }));
    assert.deepEqual(kinds(p0), ['restart:web-2']);
  });

  it('paused: nothing new starts; relabelling of finished pods goes on', () => {
    const p = planRollout(input({ rollout: ipr({ paused: true }) }));
    assert.deepEqual(kinds(p), []);
    assert.equal(p.status.phase, 'Paused');
    const p2 = planRollout(input({ rollout: ipr({ paused: true }), pods: [0, 1, 2, 3, 4].map((i) => pod(i)).concat([pod(5, { containers: Object.entries(V2).map(([name, image]) => ({ name, image })) })]), restarts: [cr('web-5', 'Succeeded')] }));
    assert.deepEqual(kinds(p2), ['relabel:web-5']);
  });

  it('a failed pod stops the rollout: Failed (Rollback) or Paused (Pause), naming pod, container and exit code', () => {
    const failed = cr('web-5', 'Failed', { failure: { container: 'app', reason: 'container exited', exitCode: 3 } });
    const p = planRollout(input({ rollout: ipr({ maxUnavailable: 3 }), restarts: [failed] }));
    assert.deepEqual(kinds(p), []);
    assert.equal(p.status.phase, 'Failed');
    assert.deepEqual(p.status.failures, [{ pod: 'web-5', container: 'app', reason: 'container exited', exitCode: 3 }]);
    assert.match(p.status.message ?? '', /pod web-5 container app: container exited \(exit code 3\)/);
    const paused = planRollout(input({ rollout: ipr({ strategy: { failurePolicy: 'Pause' } }), restarts: [failed] }));
    assert.equal(paused.status.phase, 'Paused');
  });

  it('never a second update for one pod and revision, even after a failure', () => {
    const p = planRollout(input({ rollout: ipr({ maxUnavailable: 6, strategy: { failurePolicy: 'Pause' } }), restarts: [cr('web-5', 'Failed', { failure: { reason: 'x' } })] }));
    assert.equal(p.actions.filter((a) => a.kind === 'restart' && a.pod === 'web-5').length, 0);
  });

  it('a new revision number (kubectl rollout undo) gets new ContainerRestarts', () => {
    // Undo: revision a comes back as number 3, and the pods updated to b go back in place.
    const w = sts({ updateRevision: 'web-a' });
    const revs = [rev('web-a', 3, tpl(V1)), rev('web-b', 2, tpl(V2))];
    const pods = [0, 1, 2, 3, 4, 5].map((i) => updatedPod(i));
    const p = planRollout(input({ workload: w, revisions: revs, pods, restarts: [cr('web-5', 'Succeeded')] }));
    assert.deepEqual(kinds(p), ['restart:web-5']);
    const a = p.actions[0];
    assert.ok(a.kind === 'restart');
    assert.equal(a.name, restartName('roll', 'web-5', 3));
    assert.deepEqual(a.containers, [{ name: 'app', image: 'app:v1' }]);
  });

  it('a change beyond images: fallback Pause names the field; Recreate deletes the pod within the budget', () => {
    const revs = [rev('web-a', 1, tpl(V1)), rev('web-b', 2, tpl(V2, { env: 'y' }))];
    const p = planRollout(input({ revisions: revs }));
    assert.deepEqual(kinds(p), []);
    assert.equal(p.status.phase, 'Paused');
    assert.equal(p.status.conditions?.[0].reason, REASON.notInPlace);
    assert.match(p.status.message ?? '', /spec\.containers\[app\]\.env changed/);
    const r = planRollout(input({ revisions: revs, rollout: ipr({ fallback: 'Recreate' }) }));
    assert.deepEqual(kinds(r), ['recreate:web-5']);
  });

  it('labels alone: a relabel, no restart, no budget', () => {
    const revs = [rev('web-a', 1, tpl(V1)), rev('web-b', 2, tpl(V1, { labels: { tier: 'front' } }))];
    const p = planRollout(input({ revisions: revs }));
    assert.deepEqual(kinds(p), ['relabel:web-5', 'relabel:web-4', 'relabel:web-3', 'relabel:web-2', 'relabel:web-1', 'relabel:web-0']);
    const a = p.actions[0];
    assert.ok(a.kind === 'relabel');
    assert.deepEqual(a.labels, { tier: 'front', 'controller-revision-hash': 'web-b' });
  });

  it('a pod the controller has not created again yet (fallback Recreate deleted it) keeps the rollout Progressing', () => {
    const p = planRollout(input({ pods: [1, 2, 3, 4, 5].map((i) => updatedPod(i)) }));
    assert.equal(p.status.phase, 'Progressing');
    assert.match(p.status.message ?? '', /5 of 5 pods updated, 0 in flight, 0 waiting, 1 not created yet/);
    const all = planRollout(input({ pods: [0, 1, 2, 3, 4, 5].map((i) => updatedPod(i)) }));
    assert.equal(all.status.phase, 'Succeeded');
  });

  it('all pods updated but the last not Ready yet (or not for minReadySeconds): Progressing until it is', () => {
    const notReady = planRollout(input({ pods: [0, 1, 2, 3, 4].map((i) => updatedPod(i)).concat([updatedPod(5, { ready: false })]) }));
    assert.equal(notReady.status.phase, 'Progressing');
    assert.match(notReady.status.message ?? '', /6 of 6 pods at revision web-b; waiting for web-5 to be Ready$/);
    assert.deepEqual(kinds(notReady), []);
    const minReady = ipr({ strategy: { minReadySeconds: 2 } });
    const early = planRollout(input({ rollout: minReady, pods: [0, 1, 2, 3, 4].map((i) => updatedPod(i)).concat([updatedPod(5, { readySinceMs: NOW - 500 })]) }));
    assert.equal(early.status.phase, 'Progressing');
    assert.match(early.status.message ?? '', /waiting for web-5 to be Ready for 2 s/);
    assert.equal(early.wakeAtMs, NOW + 1500);
    const late = planRollout(input({ rollout: minReady, pods: [0, 1, 2, 3, 4].map((i) => updatedPod(i)).concat([updatedPod(5, { readySinceMs: NOW - 2000 })]) }));
    assert.equal(late.status.phase, 'Succeeded');
  });

  it('all pods updated and ready: Succeeded with updatedReplicas', () => {
    const p = planRollout(input({ pods: [0, 1, 2, 3, 4, 5].map((i) => updatedPod(i)) }));
    assert.equal(p.status.phase, 'Succeeded');
    assert.equal(p.status.updatedReplicas, 6);
    assert.equal(p.status.readyReplicas, 6);
    assert.equal(p.status.currentRevision, 'web-b');
  });

  it('pre-warm first: an ImagePrewarm of the new images before any pod; a failed node pauses naming it', () => {
    const on = ipr({ prewarm: true });
    const name = prewarmName('abcdef0123', 'web-b');
    const first = planRollout(input({ rollout: on }));
    assert.deepEqual(first.actions, [{ kind: 'prewarm', name, images: ['app:v2'] }]);
    assert.equal(first.status.phase, 'Prewarming');
    const pulling = planRollout(input({ rollout: on, prewarm: { name, done: false, failedNodes: [] } }));
    assert.deepEqual(pulling.actions, []);
    const done = planRollout(input({ rollout: on, prewarm: { name, done: true, failedNodes: [] } }));
    assert.deepEqual(kinds(done), ['restart:web-5']);
    const failed = planRollout(input({ rollout: on, prewarm: { name, done: false, failedNodes: [{ node: 'n2', reason: 'app:v2: not found' }] } }));
    assert.equal(failed.status.phase, 'Paused');
    assert.match(failed.status.message ?? '', /node n2: app:v2: not found/);
    const started = planRollout(input({ rollout: on, restarts: [cr('web-5', 'Running')] }));
    assert.equal(started.prewarm, undefined, 'once a pod was started, no pre-warm is needed');
    // No agent has summed it up for a while: the message says what is likely missing.
    const quiet = planRollout(input({ rollout: on, prewarm: { name, done: false, failedNodes: [], silentSinceMs: NOW - 10_000 } }));
    assert.doesNotMatch(quiet.status.message ?? '', /fleet-prewarm-rbac/);
    const silent = planRollout(input({ rollout: on, prewarm: { name, done: false, failedNodes: [], silentSinceMs: NOW - 45_000 } }));
    assert.equal(silent.status.phase, 'Prewarming');
    assert.match(silent.status.message ?? '', /no agent has reported on it within 30 s: apply deploy\/optional\/fleet-prewarm-rbac.yaml, or set prewarm: false/);
  });

  it("the pre-warm is done as soon as every pod's node has recorded its part, before the next summary says so", () => {
    const pw: ImagePrewarm = { metadata: { name: 'ipr-x', generation: 1, creationTimestamp: new Date(NOW).toISOString() }, spec: { images: ['app:v2'] } as ImagePrewarm['spec'], status: { observedGeneration: 1, desired: 3, succeeded: 1, failed: 0, pulling: 2, waiting: 0, failedNodes: [] } };
    const rec = (node: string, phase: 'Succeeded' | 'Pulling' | 'Failed', generation = 1): NodePrewarm => ({
      metadata: { name: node },
      spec: { nodeName: node },
      status: { prewarms: { 'ipr-x': { generation, phase, firstSeen: '', images: [{ image: 'app:v2', phase, bytesDone: 0, bytesTotal: 0, attempts: 1, ...(phase === 'Failed' ? { message: 'not found' } : {}) }] } } },
    });
    const nodes = ['n0', 'n1', 'n2', 'n0'];
    assert.equal(prewarmFromRecords(pw, nodes, [rec('n0', 'Succeeded'), rec('n1', 'Succeeded'), rec('n2', 'Pulling')]).done, false);
    assert.equal(prewarmFromRecords(pw, nodes, [rec('n0', 'Succeeded'), rec('n1', 'Succeeded'), rec('n2', 'Succeeded', 0)]).done, false, 'a record of an older generation does not count');
    assert.equal(prewarmFromRecords(pw, nodes, [rec('n0', 'Succeeded'), rec('n1', 'Succeeded'), rec('n2', 'Succeeded'), rec('other', 'Pulling')]).done, true);
    const failed = prewarmFromRecords(pw, nodes, [rec('n0', 'Succeeded'), rec('n1', 'Failed'), rec('n2', 'Succeeded')]);
    assert.equal(failed.done, false);
    assert.deepEqual(failed.failedNodes.map((f) => f.node), ['n1']);
  });

  it('DaemonSet: stable node order, partition keeps the last pods, relabel sets pod-template-generation', () => {
    const ds: WorkloadView = { kind: 'DaemonSet', name: 'agent', uid: 'd', generation: 2, observedGeneration: 2, updateStrategy: 'OnDelete', desired: 3, templateGeneration: 2, template: tpl(V2) };
    const revs = [{ ...rev('agent-a', 1, tpl(V1)), hash: 'aaa' }, { ...rev('agent-b', 2, tpl(V2)), hash: 'bbb' }];
    const dpod = (node: string, over: Partial<PodView> = {}) => pod(0, { name: `agent-${node}`, uid: node, nodeName: node, ordinal: undefined, revisionHash: 'aaa', templateGeneration: '1', ...over });
    const pods = [dpod('c'), dpod('a'), dpod('b')];
    const rollout = ipr({ targetRef: { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent' } });
    const p = planRollout({ rollout, workload: ds, revisions: revs, pods, restarts: [], nowMs: NOW });
    assert.deepEqual(kinds(p), ['restart:agent-a']);
    const part = planRollout({ rollout: { ...rollout, spec: { ...rollout.spec, partition: 2, maxUnavailable: 3 } }, workload: ds, revisions: revs, pods, restarts: [], nowMs: NOW });
    assert.deepEqual(kinds(part), ['restart:agent-a']);
    const v2 = Object.entries(V2).map(([name, image]) => ({ name, image }));
    const done = planRollout({ rollout, workload: ds, revisions: revs, pods: [dpod('a', { containers: v2 }), dpod('b'), dpod('c')], restarts: [{ name: 'x', pod: 'agent-a', revisionHash: 'bbb', revisionNumber: 2, phase: 'Succeeded' }], nowMs: NOW });
    const a = done.actions[0];
    assert.ok(a.kind === 'relabel');
    assert.deepEqual(a.labels, { 'controller-revision-hash': 'bbb', 'pod-template-generation': '2' });
  });

  it('template diff: images, labels and other fields apart', () => {
    const d = diffTemplates(tpl(V1, { labels: { a: '1' } }), tpl(V2, { labels: { b: '2' }, env: 'z' }));
    assert.deepEqual(d.images, { app: 'app:v2' });
    assert.deepEqual(d.labels, { b: '2', a: null });
    assert.deepEqual(d.other, ['spec.containers[app].env']);
    const added = diffTemplates(tpl(V1), tpl({ ...V1, extra: 'x:1' }));
    assert.deepEqual(added.other, ['spec.containers']);
  });
});
