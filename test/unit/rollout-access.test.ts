// A rollout grants nothing beyond its requester's rights (src/controllers/rollout/rollout-access.ts): what a round needs,
// the decision with a fake authorizer, and that what the rollout creates carries the same requester.
import assert from 'node:assert/strict';
import type { AccessReviewer } from '../../src/k8s/access-review.js';
import { permissionText, type Permission } from '../../src/k8s/request-permissions.js';
import type { Requester } from '../../src/k8s/requester.js';
import type { Plan, RolloutAction } from '../../src/controllers/rollout/plan.js';
import { restartObject } from '../../src/controllers/rollout/reconcile.js';
import { guardedWrite, guardPlan, roundNeeds } from '../../src/controllers/rollout/rollout-access.js';
import type { RolloutApi } from '../../src/controllers/rollout/rollout-api.js';
import type { InPlaceRollout } from '../../src/controllers/rollout/types.js';
import type { DeploymentApi } from '../../src/controllers/rollout/workloads/deployment-api.js';
import { finishDeployment, releaseHeld } from '../../src/controllers/rollout/workloads/deployment-round.js';
import type { WorkloadView } from '../../src/controllers/rollout/plan-types.js';
import { memoryLogger } from '../support/memory-logger.js';

/** An authorizer that allows exactly the listed permissions (as permissionText prints them), and records every question. */
function fakeReviewer(allowed: string[]): AccessReviewer & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    review: async (r: Requester, p: Permission) => {
      asked.push(`${r.username}: ${permissionText(p)}`);
      return { allowed: allowed.includes(permissionText(p)) };
    },
  };
}

const alice: Requester = { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'] };
const NOW = Date.parse('2026-12-01T18:00:00Z');
type Kind = WorkloadView['kind'];
const rollout = (requester: Requester | null = alice, fallback: 'Pause' | 'Recreate' = 'Pause', kind: Kind = 'StatefulSet'): InPlaceRollout => ({
  metadata: { name: 'web', namespace: 'shop', uid: 'uid-web', generation: 3 },
  spec: { targetRef: { apiVersion: 'apps/v1', kind, name: 'web' }, fallback, ...(requester ? { requester } : {}) },
  status: { phase: 'Progressing', observedGeneration: 2 },
});
const restart: RolloutAction = { kind: 'restart', name: 'web-web-2-r2', pod: 'web-2', podUid: 'p2', containers: [{ name: 'app', image: 'reg/app:v2' }], revisionHash: 'web-2', revisionNumber: 2 };
const relabel: RolloutAction = { kind: 'relabel', pod: 'web-1', podUid: 'p1', labels: { 'controller-revision-hash': 'web-2' }, annotations: {} };
const recreate: RolloutAction = { kind: 'recreate', pod: 'web-0', podUid: 'p0', reason: 'spec.containers[app].env changed' };
const prewarm: RolloutAction = { kind: 'prewarm', name: 'ipr-uid-web-web-2', images: ['reg/app:v2'] };
const plan = (actions: RolloutAction[]): Plan => ({ actions, status: { observedGeneration: 3, phase: 'Progressing', replicas: 3, updatedReplicas: 1, readyReplicas: 3, podsInFlight: ['web-1'], message: 'updating' } });

const WORKLOAD = 'patch statefulsets.apps/web in namespace shop';
const ALL = [WORKLOAD, 'patch pods/web-2 in namespace shop', 'patch pods/web-1 in namespace shop', 'delete pods/web-0 in namespace shop', 'create imageprewarms.inplace-agent.io (cluster-wide)', 'list pods in namespace shop'];

describe("an InPlaceRollout acts only within its requester's rights (rollout-access)", () => {
  it('a round needs patch on the workload, patch on each pod it updates or relabels, delete for Recreate, and create imageprewarms plus list pods for a pre-warm', () => {
    const needs = roundNeeds(rollout(), [restart, relabel, recreate, prewarm]);
    assert.deepEqual(needs.map((n) => n.anyOf.map(permissionText).join(' or ')), ALL);
    assert.deepEqual(roundNeeds(rollout(), []), [], 'a round that does nothing needs nothing');
  });

  it('each permission is asked for once per round', () => {
    const again: RolloutAction = { ...relabel, pod: 'web-2', podUid: 'p2' };
    const needs = roundNeeds(rollout(), [restart, again]).map((n) => n.anyOf.map(permissionText).join(' or '));
    assert.deepEqual(needs, [WORKLOAD, 'patch pods/web-2 in namespace shop']);
  });

  it('a requester holding every permission: the plan is carried out as planned, after a review of each, for that user', async () => {
    const r = fakeReviewer(ALL);
    const p = plan([restart, relabel, recreate, prewarm]);
    assert.equal(await guardPlan(r, rollout(), p, NOW), p);
    assert.deepEqual(r.asked, ALL.map((a) => `alice: ${a}`));
  });

  it('a requester without patch on the pods: nothing to do, Failed with reason Forbidden, naming the user and the permission', async () => {
    const r = fakeReviewer([WORKLOAD]);
    const out = await guardPlan(r, rollout(), plan([restart]), NOW);
    assert.deepEqual(out.actions, []);
    assert.equal(out.status.phase, 'Failed');
    assert.equal(
      out.status.message,
      'InPlaceRollout shop/web: its creator alice may not patch pods/web-2 in namespace shop, which it needs to change the image of app of pod web-2; nothing was touched',
    );
    for (const type of ['Progressing', 'Complete']) {
      const c = out.status.conditions?.find((x) => x.type === type);
      assert.deepEqual([c?.status, c?.reason, c?.message], ['False', 'Forbidden', out.status.message], type);
      assert.equal(c?.lastTransitionTime, new Date(NOW).toISOString());
    }
    // The counts of what was observed stay: the status still says where the workload is.
    assert.deepEqual([out.status.replicas, out.status.updatedReplicas, out.status.readyReplicas, out.status.observedGeneration], [3, 1, 3, 3]);
  });

  it('a requester without patch on the workload is refused before any pod is looked at', async () => {
    const r = fakeReviewer(ALL.filter((a) => a !== WORKLOAD));
    const out = await guardPlan(r, rollout(), plan([restart]), NOW);
    assert.match(out.status.message ?? '', /its creator alice may not patch statefulsets\.apps\/web in namespace shop, which it needs to roll out StatefulSet web/);
    assert.deepEqual(r.asked, [`alice: ${WORKLOAD}`]);
  });

  it('fallback Recreate needs delete on the pod: patch alone is not enough', async () => {
    const r = fakeReviewer([WORKLOAD, 'patch pods/web-0 in namespace shop']);
    const out = await guardPlan(r, rollout(alice, 'Recreate'), plan([recreate]), NOW);
    assert.equal(out.status.phase, 'Failed');
    assert.match(out.status.message ?? '', /may not delete pods\/web-0 in namespace shop, which it needs to have the controller recreate the pod from the new template \(fallback Recreate\)/);
  });

  it('a pre-warm needs create on imageprewarms (cluster-wide)', async () => {
    const r = fakeReviewer([WORKLOAD, 'list pods in namespace shop']);
    const out = await guardPlan(r, rollout(), plan([prewarm]), NOW);
    assert.match(out.status.message ?? '', /may not create imageprewarms\.inplace-agent\.io \(cluster-wide\), which it needs to pre-warm the new images/);
  });

  it('no requester recorded: refused without asking anything, saying how to record one', async () => {
    const r = fakeReviewer(ALL);
    const out = await guardPlan(r, rollout(null), plan([restart]), NOW);
    assert.deepEqual(out.actions, []);
    assert.equal(out.status.phase, 'Failed');
    assert.equal(out.status.conditions?.[0].reason, 'Forbidden');
    assert.match(out.status.message ?? '', /^InPlaceRollout shop\/web records no requester \(spec\.requester\).*deploy\/admission-requester\.yaml.*nothing was touched$/);
    assert.deepEqual(r.asked, []);
  });

  it('a round with nothing to do asks nothing, even without a requester', async () => {
    const r = fakeReviewer([]);
    const p = plan([]);
    assert.equal(await guardPlan(r, rollout(null), p, NOW), p);
    assert.deepEqual(r.asked, []);
  });

  it("the authorizer's failure is not a refusal: it is thrown, and the round is tried again", async () => {
    const broken: AccessReviewer = { review: async () => Promise.reject(new Error('connect ECONNREFUSED')) };
    await assert.rejects(guardPlan(broken, rollout(), plan([restart]), NOW), /ECONNREFUSED/);
  });

  it("the ContainerRestart of a pod update carries the rollout's requester, so the node's agent checks that user", () => {
    if (restart.kind !== 'restart') throw new Error('restart expected');
    assert.deepEqual(restartObject(rollout(), restart).spec.requester, alice);
    assert.equal(restartObject(rollout(null), restart).spec.requester, undefined);
  });

  for (const kind of ['Deployment', 'DaemonSet'] as const) {
    const resource = `${kind.toLowerCase()}s.apps/web`;
    it(`a rollout of a ${kind} needs patch on the ${kind}: refused without it before any pod is looked at`, async () => {
      const r = fakeReviewer(ALL.filter((a) => a !== WORKLOAD));
      const out = await guardPlan(r, rollout(alice, 'Pause', kind), plan([restart]), NOW);
      assert.equal(out.status.phase, 'Failed');
      assert.deepEqual(out.actions, []);
      assert.match(out.status.message ?? '', new RegExp(`its creator alice may not patch ${resource.replace('.', '\\.')} in namespace shop, which it needs to roll out ${kind} web`));
      assert.deepEqual(r.asked, [`alice: patch ${resource} in namespace shop`]);
    });
  }

  describe("the writes on the workload after a round's actions (guardedWrite): a hold's release, a template set back", () => {
    /** A DeploymentApi that records the writes asked of it. */
    const recordingApi = (): DeploymentApi & { writes: string[] } => {
      const writes: string[] = [];
      const w = (what: string) => async () => {
        writes.push(what);
        return {} as never;
      };
      return { writes, getDeployment: async () => undefined, listReplicaSets: async () => [], patchReplicaSetTemplate: w('rs template'), keepPrevious: w('history'), restoreTemplate: w('template back'), releaseDeployment: w('release Deployment'), releaseStatefulSet: w('release StatefulSet'), releaseDaemonSet: w('release DaemonSet') };
    };
    const view = (kind: Kind, more: Partial<WorkloadView> = {}): WorkloadView => ({ kind, name: 'web', uid: 'w-uid', generation: 4, observedGeneration: 4, updateStrategy: 'RollingUpdate', desired: 3, ...more });
    const done: Plan = { actions: [], status: { observedGeneration: 3, phase: 'Succeeded', updateRevision: 'web-2', replicas: 3, updatedReplicas: 3, readyReplicas: 3, message: 'done' } };
    const cases: { kind: Kind; write: (api: RolloutApi, d: DeploymentApi, r: InPlaceRollout) => Promise<string | undefined>; wrote: string; message: RegExp }[] = [
      // A Deployment held, its template changed beyond images: handed over (the hold released).
      { kind: 'Deployment', wrote: 'release Deployment', message: /^done$/, write: (api, d, r) => finishDeployment(api, d, r, { workload: view('Deployment'), revisions: [], pods: [], selector: {}, held: true, handOver: 'spec.containers[app].env changed' }, plan([]), memoryLogger().logger) },
      { kind: 'StatefulSet', wrote: 'release StatefulSet', message: /^done; StatefulSet web released \(partition 0\)$/, write: (api, d, r) => releaseHeld(api, d, r, view('StatefulSet', { heldPartition: 0, updateRevision: 'web-2' }), done, memoryLogger().logger) },
      { kind: 'DaemonSet', wrote: 'release DaemonSet', message: /^done; DaemonSet web released \(RollingUpdate maxUnavailable=1,maxSurge=0\)$/, write: (api, d, r) => releaseHeld(api, d, r, view('DaemonSet', { heldStrategy: 'maxUnavailable=1,maxSurge=0' }), done, memoryLogger().logger, 'web-2') },
    ];
    for (const c of cases) {
      const resource = `${c.kind.toLowerCase()}s.apps/web`;
      it(`${c.kind}: a requester without patch on it: nothing written, Failed with reason Forbidden naming the user and the permission`, async () => {
        const r = fakeReviewer([]);
        const d = recordingApi();
        const ro = rollout(alice, 'Pause', c.kind);
        const out = await guardedWrite(ro, done, NOW, () => c.write(r as unknown as RolloutApi, d, ro));
        assert.deepEqual(d.writes, [], 'nothing written');
        assert.equal(out.status.phase, 'Failed');
        assert.equal(out.status.conditions?.find((x) => x.type === 'Progressing')?.reason, 'Forbidden');
        assert.match(out.status.message ?? '', new RegExp(`its creator alice may not patch ${resource.replace('.', '\\.')} in namespace shop`));
      });
      it(`${c.kind}: a requester with patch on it: written, what was done added to the message (a hand-over adds nothing)`, async () => {
        const r = fakeReviewer([`patch ${resource} in namespace shop`]);
        const d = recordingApi();
        const ro = rollout(alice, 'Pause', c.kind);
        const out = await guardedWrite(ro, done, NOW, () => c.write(r as unknown as RolloutApi, d, ro));
        assert.deepEqual(d.writes, [c.wrote]);
        assert.equal(out.status.phase, 'Succeeded');
        assert.match(out.status.message ?? '', c.message);
        assert.deepEqual(r.asked, [`alice: patch ${resource} in namespace shop`]);
      });
    }
  });
});
