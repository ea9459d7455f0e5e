// The rollout planner's stages, each alone: classify (plan-classify.ts), budget (plan-budget.ts), gates
// (plan-gates.ts) and the status (plan-status.ts). planRollout's whole behaviour is rollout-plan.test.ts's.
import assert from 'node:assert/strict';
import { restartName, prewarmName, REASON, type CreateConflict, type PodView, type RestartView, type RevisionView, type WorkloadView } from '../../src/controllers/rollout/plan.js';
import { classifyPods, type Classes, type ClassifyInput } from '../../src/controllers/rollout/plan-classify.js';
import { budgetOf, isAvailable, isBack, scopeOf, type Budget } from '../../src/controllers/rollout/plan-budget.js';
import { gateRound, type GateInput } from '../../src/controllers/rollout/plan-gates.js';
import { PREWARM_RECHECK_MS } from '../../src/controllers/kit/prewarm-settings.js';
import { roundStatus, stoppedStatus } from '../../src/controllers/rollout/plan-status.js';
import type { PodTemplate } from '../../src/controllers/rollout/template-diff.js';
import type { InPlaceRollout } from '../../src/controllers/rollout/types.js';

const NOW = Date.parse('2026-12-01T12:00:00Z');
const tpl = (app: string, env?: string): PodTemplate => ({
  metadata: { labels: { app: 'web' } },
  spec: { containers: [{ name: 'app', image: app, ...(env ? { env: [{ name: 'X', value: env }] } : {}) }, { name: 'side', image: 'side:1' }] },
});
const A: RevisionView = { name: 'web-a', hash: 'web-a', revision: 1, template: tpl('app:v1') };
const B: RevisionView = { name: 'web-b', hash: 'web-b', revision: 2, template: tpl('app:v2') };
const sts: WorkloadView = { kind: 'StatefulSet', name: 'web', uid: 'w1', generation: 2, observedGeneration: 2, updateStrategy: 'OnDelete', desired: 4, updateRevision: 'web-b' };
const pod = (i: number, over: Partial<PodView> = {}): PodView => ({
  name: `web-${i}`,
  uid: `u${i}`,
  nodeName: `n${i}`,
  ordinal: i,
  revisionHash: 'web-a',
  deleting: false,
  ready: true,
  readySinceMs: NOW - 60_000,
  containers: [
    { name: 'app', image: 'app:v1' },
    { name: 'side', image: 'side:1' },
  ],
  labels: { app: 'web', 'controller-revision-hash': 'web-a' },
  annotations: {},
  ...over,
});
const cr = (p: string, phase: RestartView['phase'], over: Partial<RestartView> = {}): RestartView => ({ name: restartName('roll', p, 2), pod: p, revisionHash: 'web-b', revisionNumber: 2, phase, ...over });
const classify = (pods: PodView[], over: Partial<ClassifyInput> = {}): Classes =>
  classifyPods({
    rolloutName: 'roll',
    workload: sts,
    target: B,
    byHash: new Map([A, B].map((r) => [r.hash, r])),
    order: pods,
    inScope: new Set(pods.map((p) => p.name)),
    restartOf: new Map(),
    conflictOf: new Map(),
    ...over,
  });
const names = (c: Classes) => ({
  inFlight: [...c.inFlight],
  failures: c.failures.map((f) => f.pod),
  candidates: c.candidates.map((x) => `${x.pod.name}${x.fallback ? ' (fallback)' : ''}`),
  unscheduled: c.unscheduled,
  relabels: c.relabels.map((a) => ('pod' in a ? a.pod : a.name)),
});

describe('rollout planner stages', () => {
  describe('classify', () => {
    it('sorts each pod behind the target into one class, in the order given, and skips updated and out-of-scope pods', () => {
      const pods = [
        pod(0, { revisionHash: 'web-b' }),
        pod(1),
        pod(2),
        pod(3),
        pod(4, { nodeName: undefined }),
        pod(5, { containers: [{ name: 'app', image: 'app:v2' }, { name: 'side', image: 'side:1' }] }),
        pod(6, { revisionHash: 'gone' }),
        pod(7),
      ];
      const restartOf = new Map([cr('web-2', 'Running'), cr('web-3', 'Failed', { failure: { container: 'app', reason: 'Crash', exitCode: 2 } }), cr('web-5', 'Succeeded')].map((r) => [r.pod, r]));
      const c = classify(pods, { restartOf, inScope: new Set(pods.filter((p) => p.name !== 'web-7').map((p) => p.name)) });
      assert.deepEqual(names(c), { inFlight: ['web-2', 'web-5'], failures: ['web-3'], candidates: ['web-1', 'web-6 (fallback)'], unscheduled: ['web-4'], relabels: ['web-5'] });
      assert.deepEqual(c.failures[0], { pod: 'web-3', container: 'app', reason: 'Crash', exitCode: 2 });
      assert.deepEqual(c.candidates[0].images, [{ name: 'app', image: 'app:v2' }]);
      assert.match(c.candidates[1].fallback ?? '', /revision gone is no longer listed/);
      assert.deepEqual([...c.imagesToWarm], ['app:v2'], 'a fallback pod warms nothing');
      assert.deepEqual(c.relabels[0], { kind: 'relabel', pod: 'web-5', podUid: 'u5', labels: { 'controller-revision-hash': 'web-b' }, annotations: {} });
    });

    it('a change beyond images is a fallback candidate naming what changed', () => {
      const c = classify([pod(1)], { target: { ...B, template: tpl('app:v2', 'x') } });
      assert.match(c.candidates[0].fallback ?? '', /env/);
    });

    it('a restart name held by another owner is a failure, and the first failure names its reason', () => {
      const conflict: CreateConflict = { kind: 'ContainerRestart', name: restartName('roll', 'web-1', 2), reason: REASON.nameTaken, message: 'held by someone' };
      const c = classify([pod(1), pod(2)], { conflictOf: new Map([[conflict.name, conflict]]) });
      assert.deepEqual(names(c).candidates, ['web-2']);
      assert.deepEqual(c.failures, [{ pod: 'web-1', reason: `${REASON.nameTaken}: held by someone` }]);
      assert.equal(c.conflictFirst, REASON.nameTaken);
    });
  });

  describe('budget', () => {
    it('orders a StatefulSet by highest ordinal and a DaemonSet by node, each within the partition', () => {
      const pods = [pod(0, { nodeName: 'c' }), pod(2, { nodeName: 'a' }), pod(1, { nodeName: 'b' })];
      const s = scopeOf(sts, pods, 1);
      assert.deepEqual(s.order.map((p) => p.name), ['web-2', 'web-1', 'web-0']);
      assert.deepEqual([...s.inScope], ['web-2', 'web-1']);
      const d = scopeOf({ ...sts, kind: 'DaemonSet' }, pods, 0);
      assert.deepEqual(d.order.map((p) => p.nodeName), ['a', 'b', 'c']);
    });

    it('available means Ready for minReadySeconds', () => {
      assert.equal(isAvailable(pod(0, { readySinceMs: NOW - 5_000 }), NOW, 10_000), false);
      assert.equal(isAvailable(pod(0, { readySinceMs: NOW - 5_000 }), NOW, 5_000), true);
      assert.equal(isAvailable(pod(0, { ready: false }), NOW, 0), false);
    });

    it('a pod in flight is back only once its restarted containers started after its restart and run the target ready', () => {
      const wanted = [{ name: 'app', image: 'app:v2' }];
      const v2 = [{ name: 'app', image: 'app:v2' }];
      const r = cr('web-0', 'Running', { containers: ['app'], createdMs: NOW - 10_000 });
      assert.equal(isBack(pod(0, { containers: v2, statuses: [{ name: 'app', image: 'app:v2', ready: true, startedAtMs: NOW - 20_000 }] }), r, wanted, NOW, 0), false);
      assert.equal(isBack(pod(0, { containers: v2, statuses: [{ name: 'app', image: 'docker.io/library/app:v2', ready: true, startedAtMs: NOW - 1_000 }] }), r, wanted, NOW, 0), true);
    });

    it('counts unavailable, in-flight and missing pods once each against maxUnavailable, and says when a young pod becomes available', () => {
      const live = [pod(0, { ready: false }), pod(1), pod(2, { readySinceMs: NOW - 1_000 })];
      const b = budgetOf({ workload: { ...sts, desired: 5 }, maxUnavailable: 4, live, inFlight: new Set(['web-0', 'web-1']), restartOf: new Map(), wanted: [{ name: 'app', image: 'app:v2' }], nowMs: NOW, minReadyMs: 10_000 });
      // Unavailable: web-0 (not ready), web-2 (young), web-1 (in flight, not back); missing: 2.
      assert.deepEqual(b, { maxUnavailable: 4, missing: 2, room: 4 - 3 - 2, dueMs: [NOW + 9_000] });
      const own = budgetOf({ workload: { ...sts, maxUnavailable: '50%' }, maxUnavailable: 1, live: [pod(0), pod(1), pod(2), pod(3)], inFlight: new Set(), restartOf: new Map(), wanted: [], nowMs: NOW, minReadyMs: 0 });
      assert.equal(own.maxUnavailable, 2, "the workload's own maxUnavailable wins");
    });
  });

  describe('gates', () => {
    const classes = (over: Partial<Classes> = {}): Classes => ({ relabels: [], inFlight: new Set(), failures: [], candidates: [], unscheduled: [], imagesToWarm: new Set(), ...over });
    const budget = (over: Partial<Budget> = {}): Budget => ({ maxUnavailable: 1, missing: 0, room: 1, dueMs: [], ...over });
    const gate = (over: Partial<GateInput> = {}): GateInput => {
      const live = [pod(0), pod(1)];
      return {
        rolloutName: 'roll',
        rolloutUid: 'uid1',
        spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' } },
        workload: sts,
        target: B,
        classes: classes(),
        budget: budget(),
        scope: { order: live, inScope: new Set(live.map((p) => p.name)) },
        partition: 0,
        live,
        updated: 0,
        available: (p) => p.ready,
        minReadyMs: 0,
        started: false,
        conflictOf: new Map(),
        nowMs: NOW,
        ...over,
      };
    };
    const cand = (i: number, fallback?: string) => ({ pod: pod(i), images: [{ name: 'app', image: 'app:v2' }], fallback });

    it('a failure stops the round: Failed, Paused under failurePolicy Pause, the conflict reason for a create refused', () => {
      const failures = [{ pod: 'web-1', container: 'app', reason: 'Crash', exitCode: 1 }];
      const v = gateRound(gate({ classes: classes({ failures, candidates: [cand(0)] }) }));
      assert.deepEqual([v.phase, v.reason, v.actions, v.started], ['Failed', REASON.podFailed, [], []]);
      assert.equal(v.message, 'pod web-1 container app: Crash (exit code 1); no further pod is started');
      assert.equal(gateRound(gate({ spec: { ...gate().spec, strategy: { failurePolicy: 'Pause' } }, classes: classes({ failures }) })).phase, 'Paused');
      assert.equal(gateRound(gate({ classes: classes({ failures, conflictFirst: REASON.createRefused }) })).reason, REASON.createRefused);
    });

    it('under fallback Pause a pod that cannot be updated in place pauses; under Recreate it is recreated', () => {
      const c = classes({ candidates: [cand(0, 'env changed')] });
      const paused = gateRound(gate({ classes: c }));
      assert.deepEqual([paused.phase, paused.reason, paused.message], ['Paused', REASON.notInPlace, 'cannot update in place (fallback Pause): pod web-0: env changed']);
      const recreate = gateRound(gate({ spec: { ...gate().spec, fallback: 'Recreate' }, classes: c }));
      assert.deepEqual(recreate.actions, [{ kind: 'recreate', pod: 'web-0', podUid: 'u0', reason: 'env changed' }]);
    });

    it('done: Succeeded once every pod in scope is available, Progressing while one is not', () => {
      const done = gateRound(gate({ updated: 2, partition: 1, scope: { order: [pod(1)], inScope: new Set(['web-1']) } }));
      assert.deepEqual([done.phase, done.message], ['Succeeded', '2 of 2 pods at revision web-b (partition 1: 1 pods keep their revision)']);
      const notYet = gateRound(gate({ updated: 2, available: (p) => p.name !== 'web-1', minReadyMs: 5_000 }));
      assert.deepEqual([notYet.phase, notYet.message], ['Progressing', '2 of 2 pods at revision web-b; waiting for web-1 to be Ready for 5 s']);
      assert.equal(gateRound(gate({ budget: budget({ missing: 1 }) })).phase, 'Progressing', 'a pod yet to be created is not done');
    });

    it('spec.paused starts nothing', () => {
      const v = gateRound(gate({ spec: { ...gate().spec, paused: true }, classes: classes({ candidates: [cand(0)] }) }));
      assert.deepEqual([v.phase, v.actions], ['Paused', []]);
    });

    it('the pre-warm holds the first start until done, asks for the ImagePrewarm once, and fails or pauses on its troubles', () => {
      const name = prewarmName('uid1', 'web-b');
      const g = (over: Partial<GateInput>) => gate({ spec: { ...gate().spec, prewarm: true }, classes: classes({ candidates: [cand(0)], imagesToWarm: new Set(['app:v2']) }), ...over });
      const first = gateRound(g({}));
      assert.deepEqual([first.phase, first.prewarm, first.wakeAtMs, first.actions], ['Prewarming', name, NOW + PREWARM_RECHECK_MS, [{ kind: 'prewarm', name, images: ['app:v2'] }]]);
      const pulling = gateRound(g({ prewarm: { name, done: false, failedNodes: [], silentSinceMs: NOW - 3_600_000 } }));
      assert.deepEqual(pulling.actions, []);
      assert.match(pulling.message, /no agent has reported on it/);
      const failed = gateRound(g({ prewarm: { name, done: false, failedNodes: [{ node: 'n1', reason: 'denied' }] } }));
      assert.deepEqual([failed.phase, failed.reason], ['Paused', REASON.prewarmFailed]);
      const taken = gateRound(g({ conflictOf: new Map([[name, { kind: 'ImagePrewarm', name, reason: REASON.nameTaken, message: 'x' }]]) }));
      assert.deepEqual([taken.phase, taken.reason], ['Failed', REASON.nameTaken]);
      const done = gateRound(g({ prewarm: { name, done: true, failedNodes: [] } }));
      assert.deepEqual([done.phase, done.started, done.prewarm], ['Progressing', ['web-0'], undefined]);
      assert.equal(gateRound(g({ started: true })).phase, 'Progressing', 'once a pod was started the pre-warm is behind us');
    });

    it('candidates start in order within the budget; a pod already unavailable costs nothing', () => {
      const v = gateRound(gate({ classes: classes({ candidates: [cand(0), cand(1), cand(2)], unscheduled: ['web-9'] }), budget: budget({ room: 1 }), available: (p) => p.name !== 'web-0' }));
      assert.deepEqual(v.started, ['web-0', 'web-1']);
      assert.deepEqual(
        v.actions.map((a) => ('name' in a ? a.name : a.kind)),
        [restartName('roll', 'web-0', 2), restartName('roll', 'web-1', 2)],
      );
      assert.equal(v.message, '0 of 2 pods updated, 2 in flight, 1 waiting, 1 not on a node yet (web-9) (maxUnavailable 1)');
    });
  });

  describe('status', () => {
    const rollout = (status?: InPlaceRollout['status']): InPlaceRollout => ({
      metadata: { name: 'roll', namespace: 'ns', uid: 'uid1', generation: 4 },
      spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' } },
      status,
    });
    const now = new Date(NOW).toISOString();

    it('is written whole from the snapshot and the verdict: counts, pods in flight, failures, conditions', () => {
      const live = [pod(0), pod(1, { revisionHash: 'web-b', ready: false })];
      const c: Classes = { relabels: [], inFlight: new Set(['web-1']), failures: [], candidates: [], unscheduled: [], imagesToWarm: new Set() };
      const s = roundStatus(
        { rollout: rollout({ phase: 'Paused', message: 'old', podsInFlight: ['gone'], failures: [{ pod: 'gone', reason: 'x' }] }), workload: sts, target: B, ignored: [], byHash: new Map([A, B].map((r) => [r.hash, r])), live, updated: 1, now },
        c,
        { phase: 'Progressing', reason: REASON.updating, message: 'm', progressing: 'True', actions: [], started: ['web-0'] },
      );
      assert.deepEqual(s, {
        observedGeneration: 4,
        currentRevision: 'web-a',
        updateRevision: 'web-b',
        replicas: 2,
        updatedReplicas: 1,
        readyReplicas: 1,
        phase: 'Progressing',
        message: 'm',
        podsInFlight: ['web-1', 'web-0'],
        failures: [],
        conditions: [
          { type: 'Progressing', status: 'True', reason: REASON.updating, message: 'm', lastTransitionTime: now },
          { type: 'Complete', status: 'False', reason: REASON.updating, message: 'm', lastTransitionTime: now },
        ],
      });
    });

    it('keeps a condition transition time only while its status holds, and says ignored revisions', () => {
      const before = '2026-11-30T00:00:00.000Z';
      const prev = { conditions: [{ type: 'Complete', status: 'True' as const, reason: REASON.complete, message: 'old', lastTransitionTime: before }] };
      const C: RevisionView = { name: 'web-c', hash: 'web-c', revision: 3, template: tpl('app:v3') };
      const s = roundStatus(
        { rollout: rollout(prev), workload: { ...sts, kind: 'DaemonSet' }, target: B, ignored: [C], byHash: new Map(), live: [], updated: 0, now },
        { relabels: [], inFlight: new Set(), failures: [], candidates: [], unscheduled: [], imagesToWarm: new Set() },
        { phase: 'Succeeded', reason: REASON.complete, message: 'done', progressing: 'False', actions: [], started: [] },
      );
      assert.deepEqual(
        s.conditions?.map((x) => [x.type, x.status, x.reason, x.lastTransitionTime]),
        [
          ['Progressing', 'False', REASON.complete, now],
          ['Complete', 'True', REASON.complete, before],
          ['IgnoredRevisions', 'True', REASON.revisionNotFromTemplate, now],
        ],
      );
      assert.equal(s.currentRevision, 'web-b', 'with no live pod, the current revision is the target');
    });

    it('a stopped rollout says why in both conditions and carries nothing else', () => {
      const s = stoppedStatus(rollout({ phase: 'Progressing', podsInFlight: ['web-0'] }), 'Failed', REASON.targetNotFound, 'gone', now);
      assert.deepEqual(s, {
        observedGeneration: 4,
        phase: 'Failed',
        message: 'gone',
        conditions: [
          { type: 'Progressing', status: 'False', reason: REASON.targetNotFound, message: 'gone', lastTransitionTime: now },
          { type: 'Complete', status: 'False', reason: REASON.targetNotFound, message: 'gone', lastTransitionTime: now },
        ],
      });
    });
  });
});
