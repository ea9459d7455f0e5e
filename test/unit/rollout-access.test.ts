// A rollout grants nothing beyond its requester's rights (src/controllers/rollout/rollout-access.ts): what a round needs,
// the decision with a fake authorizer, and that what the rollout creates carries the same requester.
import assert from 'node:assert/strict';
import type { AccessReviewer } from '../../src/k8s/access-review.js';
import { permissionText, type Permission } from '../../src/k8s/request-permissions.js';
import type { Requester } from '../../src/k8s/requester.js';
import type { Plan, RolloutAction } from '../../src/controllers/rollout/plan.js';
import { restartObject } from '../../src/controllers/rollout/reconcile.js';
import { guardPlan, roundNeeds } from '../../src/controllers/rollout/rollout-access.js';
import type { InPlaceRollout } from '../../src/controllers/rollout/types.js';

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
const rollout = (requester: Requester | null = alice, fallback: 'Pause' | 'Recreate' = 'Pause'): InPlaceRollout => ({
  metadata: { name: 'web', namespace: 'shop', uid: 'uid-web', generation: 3 },
  spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' }, fallback, ...(requester ? { requester } : {}) },
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
});
