// A Deployment as the rollout planner sees it (src/controllers/rollout/workloads/deployment-view.ts): its ReplicaSets as
// revisions, its template as the target while it is held, the pods marked by annotation, and why the rollout does
// not act when the Deployment is not held.
import assert from 'node:assert/strict';
import type { V1Deployment, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { planRollout, POD_TEMPLATE_ANNOTATION, restartName, type PodView } from '../../src/controllers/rollout/plan.js';
import type { InPlaceRollout } from '../../src/controllers/rollout/types.js';
import { deploymentObserved, DEPLOYMENT_REASON, markedTemplate, templateHash, withoutHash, type DeploymentObserved } from '../../src/controllers/rollout/workloads/deployment-view.js';
import { DEPLOYMENT_HOLD_ANNOTATION, ROLLED_BACK_ANNOTATION, templateRestore } from '../../src/controllers/rollout/workloads/hold.js';
import { failedAtFirst, finishDeployment, markReplicaSet } from '../../src/controllers/rollout/workloads/deployment-round.js';
import type { DeploymentApi } from '../../src/controllers/rollout/workloads/deployment-api.js';
import type { RolloutApi } from '../../src/controllers/rollout/rollout-api.js';
import type { Plan } from '../../src/controllers/rollout/plan-types.js';
import { memoryLogger } from '../support/memory-logger.js';
import { roundNeeds } from '../../src/controllers/rollout/rollout-access.js';
import { permissionText } from '../../src/k8s/request-permissions.js';

const NOW = Date.parse('2026-12-02T12:00:00Z');
const template = (image: string, annotations?: Record<string, string>, env?: string) => ({
  metadata: { labels: { app: 'web' }, ...(annotations ? { annotations } : {}) },
  spec: { containers: [{ name: 'app', image, ...(env ? { env: [{ name: 'X', value: env }] } : {}) }] },
});
const deployment = (t: ReturnType<typeof template>, over: { paused?: boolean; held?: boolean; maxUnavailable?: string | number } = {}): V1Deployment => ({
  metadata: { name: 'web', uid: 'd1', generation: 3, annotations: over.held ? { [DEPLOYMENT_HOLD_ANNOTATION]: 'paused' } : {} },
  spec: { replicas: 4, paused: over.paused, selector: { matchLabels: { app: 'web' } }, strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: over.maxUnavailable ?? '25%' } }, template: t },
  status: { observedGeneration: 3 },
});
const replicaSet = (name: string, hash: string, t: ReturnType<typeof template>, replicas: number): V1ReplicaSet => ({
  metadata: { name, uid: `rs-${name}`, labels: { app: 'web', 'pod-template-hash': hash }, annotations: { 'deployment.kubernetes.io/revision': '1' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'd1', controller: true }] },
  spec: { replicas, selector: { matchLabels: { app: 'web' } }, template: { ...t, metadata: { ...t.metadata, labels: { ...t.metadata.labels, 'pod-template-hash': hash } } } },
});
const pod = (i: number, image: string, annotations: Record<string, string> = {}): V1Pod => ({
  metadata: { name: `web-${i}`, uid: `p${i}`, labels: { app: 'web', 'pod-template-hash': 'aaa' }, annotations, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-aaa', uid: 'rs-web-aaa', controller: true }] },
  spec: { nodeName: `n${i}`, containers: [{ name: 'app', image }] },
  status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(NOW - 60_000) }], containerStatuses: [{ name: 'app', image, ready: true, imageID: '', restartCount: 0, started: true }] as never },
});
/** The pods' fields as observe.ts reads them, for the ReplicaSets given. */
const base = (pods: V1Pod[], owners: Set<string>): PodView[] =>
  pods
    .filter((p) => owners.has(p.metadata?.ownerReferences?.[0].uid ?? ''))
    .map((p) => ({
      name: p.metadata?.name ?? '',
      uid: p.metadata?.uid ?? '',
      nodeName: p.spec?.nodeName,
      revisionHash: '',
      deleting: false,
      ready: true,
      readySinceMs: NOW - 60_000,
      containers: (p.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image ?? '' })),
      statuses: [{ name: 'app', image: p.spec?.containers[0].image ?? '', ready: true }],
      labels: p.metadata?.labels ?? {},
      annotations: p.metadata?.annotations ?? {},
    }));
const rollout: InPlaceRollout = { metadata: { name: 'web', namespace: 'ns', uid: 'r1', generation: 1 }, spec: { targetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, prewarm: false, maxUnavailable: 3 } };
const plan = (d: V1Deployment, rss: V1ReplicaSet[], pods: V1Pod[]) => {
  const o = deploymentObserved(d, rss, pods, base);
  return { o, p: planRollout({ rollout, workload: o.workload, revisions: o.revisions, pods: o.pods, restarts: [], nowMs: NOW }) };
};
const V1T = template('app:v1');
const four = (image: string, ann?: Record<string, string>) => [0, 1, 2, 3].map((i) => pod(i, image, ann));

describe('rollout of a Deployment (deployment-view.ts)', () => {
  it("its template equal to its ReplicaSet's (the hash aside): nothing to do, Succeeded", () => {
    const { o, p } = plan(deployment(V1T), [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'));
    assert.deepEqual(withoutHash(o.revisions[0].template), o.revisions[0].template);
    assert.equal(o.revisions.length, 1, 'no target of its own: the ReplicaSet is it');
    assert.equal(p.status.phase, 'Succeeded');
    assert.deepEqual(p.actions, []);
  });

  it("held with a new image: ContainerRestarts within the Deployment's maxUnavailable (25% of 4 = 1), not the rollout's", () => {
    const { p } = plan(deployment(template('app:v2'), { paused: true, held: true }), [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'));
    assert.equal(p.status.phase, 'Progressing');
    assert.deepEqual(p.actions.map((a) => a.kind), ['restart']);
    const a = p.actions[0] as Extract<(typeof p.actions)[0], { kind: 'restart' }>;
    assert.deepEqual(a.containers, [{ name: 'app', image: 'app:v2' }]);
    assert.equal(a.name, restartName('web', 'web-0', 3), "numbered by the Deployment's generation");
  });

  it('a pod whose restart succeeded is marked with the template by annotation (its pod-template-hash label kept)', () => {
    const d = deployment(template('app:v2'), { paused: true, held: true });
    const o = deploymentObserved(d, [replicaSet('web-aaa', 'aaa', V1T, 4)], [pod(0, 'app:v2'), ...[1, 2, 3].map((i) => pod(i, 'app:v1'))], base);
    const target = templateHash(d.spec?.template as never);
    const p = planRollout({ rollout, workload: o.workload, revisions: o.revisions, pods: o.pods, nowMs: NOW, restarts: [{ name: restartName('web', 'web-0', 3), pod: 'web-0', revisionHash: target, revisionNumber: 3, phase: 'Succeeded' }] });
    const relabel = p.actions.find((a) => a.kind === 'relabel');
    assert.ok(relabel && relabel.kind === 'relabel');
    assert.deepEqual(relabel.labels, {});
    assert.deepEqual(relabel.annotations, { [POD_TEMPLATE_ANNOTATION]: target });
  });

  it('every pod marked with the template and available: Succeeded (the round then finishes the ReplicaSet and releases)', () => {
    const d = deployment(template('app:v2'), { paused: true, held: true });
    const target = templateHash(d.spec?.template as never);
    const { o, p } = plan(d, [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v2', { [POD_TEMPLATE_ANNOTATION]: target }));
    assert.equal(o.held, true);
    assert.equal(p.status.phase, 'Succeeded', p.status.message);
  });

  it('kubectl rollout restart (a template annotation): every container restarted in place with its own image', () => {
    const { p } = plan(deployment(template('app:v1', { 'kubectl.kubernetes.io/restartedAt': '2026-12-02T12:00:00Z' }), { paused: true, held: true }), [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'));
    assert.deepEqual(p.actions.map((a) => a.kind === 'restart' && a.containers), [[{ name: 'app', image: 'app:v1' }]]);
  });

  it('kubectl rollout restart: a pod in flight holds the budget until its container is a new one (the old one, Ready on the same image, does not count)', () => {
    const d = deployment(template('app:v1', { 'kubectl.kubernetes.io/restartedAt': '2026-12-02T12:00:00Z' }), { paused: true, held: true });
    const o = deploymentObserved(d, [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'), base);
    const target = templateHash(d.spec?.template as never);
    const created = NOW - 5_000;
    const startedAt = (ms: number) => o.pods.map((p) => (p.name === 'web-0' ? { ...p, statuses: [{ name: 'app', image: 'app:v1', ready: true, startedAtMs: ms }] } : p));
    const restarts = [{ name: restartName('web', 'web-0', 3), pod: 'web-0', revisionHash: target, revisionNumber: 3, phase: 'Running' as const, containers: ['app'], createdMs: created }];
    const round = (pods: PodView[]) => planRollout({ rollout, workload: o.workload, revisions: o.revisions, pods, restarts, nowMs: NOW });
    // The container started before the restart was asked for (in the same second too): web-0 is not back, nothing more starts.
    for (const old of [NOW - 60_000, created]) {
      const p = round(startedAt(old));
      assert.deepEqual(p.actions, [], `old container started at ${old - NOW} ms`);
      assert.deepEqual(p.status.podsInFlight, ['web-0']);
    }
    // Its new container, Ready: the next pod starts.
    assert.deepEqual(round(startedAt(created + 1000)).actions.map((a) => a.kind === 'restart' && a.pod), ['web-1']);
  });

  it("a round that acts on a Deployment's pods needs its requester to hold patch on the Deployment", () => {
    const { p } = plan(deployment(template('app:v2'), { paused: true, held: true }), [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'));
    const needs = roundNeeds({ ...rollout, metadata: { ...rollout.metadata, namespace: 'shop' } }, p.actions).map((n) => n.anyOf.map(permissionText).join(' or '));
    assert.equal(needs[0], 'patch deployments.apps/web in namespace shop');
  });

  it('a change beyond images and annotations: handed over to the stock rolling update, naming the field', () => {
    const { o, p } = plan(deployment(template('app:v1', undefined, 'x'), { paused: true, held: true }), [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'));
    assert.equal(o.handOver, 'spec.containers[app].env changed');
    assert.equal(p.status.conditions?.[0].reason, DEPLOYMENT_REASON.handedOver);
    assert.match(p.status.message ?? '', /handed over .*spec\.containers\[app\]\.env changed/);
    assert.deepEqual(p.actions, []);
  });

  it('not held (no policy), paused by its user, or rolled by the stock controller: nothing done, the status says which', () => {
    const rs = [replicaSet('web-aaa', 'aaa', V1T, 4)];
    const notHeld = plan(deployment(template('app:v2')), rs, four('app:v1')).p;
    assert.equal(notHeld.status.conditions?.[0].reason, DEPLOYMENT_REASON.notHeld);
    assert.match(notHeld.status.message ?? '', /not held.*workload-hold-policy\.yaml.*kubectl rollout pause/);
    const user = plan(deployment(template('app:v2'), { paused: true }), rs, four('app:v1')).p;
    assert.equal(user.status.phase, 'Paused');
    assert.equal(user.status.conditions?.[0].reason, DEPLOYMENT_REASON.pausedByUser);
    const two = [...rs, replicaSet('web-bbb', 'bbb', template('app:v2'), 1)];
    const stock = deploymentObserved(deployment(template('app:v2')), two, four('app:v1'), base, true).workload.gate;
    assert.equal(stock?.reason, DEPLOYMENT_REASON.stockRollingUpdate, 'after a hand-over');
    // Without the policy the controller makes its new ReplicaSet at once: the rollout sees two, and says not held.
    const unheld = plan(deployment(template('app:v2')), two, four('app:v1')).p;
    assert.equal(unheld.status.conditions?.[0].reason, DEPLOYMENT_REASON.notHeld);
    assert.match(unheld.status.message ?? '', /not held.*workload-hold-policy\.yaml.*kubectl rollout pause.*2 ReplicaSets hold pods/);
    for (const x of [notHeld, user, unheld]) assert.deepEqual(x.actions, []);
  });

  it('its first pod failed and rolled back, none on the new template: the template is set back (while paused) and the Deployment then says RolledBack', () => {
    const d = deployment(template('app:crash'), { paused: true, held: true });
    const o = deploymentObserved(d, [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'), base);
    const target = templateHash(d.spec?.template as never);
    const failed = { name: restartName('web', 'web-0', 3), pod: 'web-0', revisionHash: target, revisionNumber: 3, phase: 'Failed' as const, failure: { container: 'app', reason: 'RolledBack: exited', exitCode: 3 } };
    const p = planRollout({ rollout, workload: o.workload, revisions: o.revisions, pods: o.pods, restarts: [failed], nowMs: NOW });
    assert.equal(p.status.phase, 'Failed');
    assert.equal(failedAtFirst(rollout, p), true);
    assert.equal(failedAtFirst({ ...rollout, spec: { ...rollout.spec, strategy: { failurePolicy: 'Pause' } } }, p), false, 'failurePolicy Pause leaves it held');
    assert.equal(failedAtFirst(rollout, { ...p, status: { ...p.status, updatedReplicas: 1 } }), false, 'a pod on the new template: not set back');
    // Tested held and paused first, so the hold policy (which acts on unpaused Deployments) stays out of it.
    assert.deepEqual(templateRestore({}, 'why').map((x) => x.op), ['test', 'test', 'replace', 'add']);
    const back = deployment(V1T);
    back.metadata = { ...back.metadata, annotations: { [ROLLED_BACK_ANNOTATION]: p.status.message ?? '' } };
    const gate = deploymentObserved(back, [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'), base).workload.gate;
    assert.equal(gate?.phase, 'Failed');
    assert.equal(gate?.reason, DEPLOYMENT_REASON.rolledBack);
    assert.match(gate?.message ?? '', /rolled back in place.*web-aaa.*exit code 3/);
  });
});

describe("a held Deployment's ReplicaSet marked with the target before its pods (deployment-view.ts, deployment-round.ts)", () => {
  const V2T = template('app:v2');
  const target = templateHash(V2T as never);
  const held = () => deployment(V2T, { paused: true, held: true });
  const marked = (hash = target, t = V2T) => replicaSet('web-aaa', 'aaa', markedTemplate(t as never, hash) as typeof V1T, 4);
  const history = () => replicaSet('web-inplace-previous', 'inplace-previous', V1T, 0);
  type Written = { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: { containers: { image: string }[] } };
  /** A DeploymentApi that records its writes and the template each writes. */
  const recording = () => {
    const writes: { what: string; template?: unknown }[] = [];
    const w = (what: string) => async (_ns: string, _o: unknown, t?: unknown) => {
      writes.push({ what, ...(what === 'history' ? {} : { template: t }) });
      return {} as never;
    };
    const api: DeploymentApi = { getDeployment: async () => undefined, listReplicaSets: async () => [], patchReplicaSetTemplate: w('rs template'), keepPrevious: w('history'), restoreTemplate: w('template back'), releaseDeployment: w('release'), releaseStatefulSet: w('-'), releaseDaemonSet: w('-') };
    return { api, writes };
  };
  const reviewer = { review: async () => ({ allowed: true }) } as unknown as RolloutApi;
  const asked: InPlaceRollout = { ...rollout, spec: { ...rollout.spec, requester: { username: 'alice' } } };
  const log = memoryLogger().logger;
  const round = (o: DeploymentObserved, restarts: Parameters<typeof planRollout>[0]['restarts'] = []): Plan => planRollout({ rollout, workload: o.workload, revisions: o.revisions, pods: o.pods, restarts, nowMs: NOW });

  it("marked: its pods' revision is the history's template (no annotation change, so no restart-like update); pods born marked count as updated and get no ContainerRestart", () => {
    const o = deploymentObserved(held(), [marked(), history()], [...[0, 1, 2].map((i) => pod(i, 'app:v1')), pod(3, 'app:v2', { [POD_TEMPLATE_ANNOTATION]: target })], base);
    assert.equal(o.marked, target);
    assert.deepEqual(o.revisions.find((r) => r.name === 'web-aaa')?.template, V1T, "the template its pods were made from, the marker gone");
    assert.deepEqual(o.previous, V1T);
    const p = round(o);
    assert.equal(p.status.updatedReplicas, 1, 'the pod born on the marked template');
    assert.deepEqual(p.actions.map((a) => a.kind === 'restart' && [a.pod, a.containers]), [['web-0', [{ name: 'app', image: 'app:v2' }]]]);
  });

  it('marked, its history ReplicaSet gone: nothing done, Paused naming it', () => {
    const gate = deploymentObserved(held(), [marked()], four('app:v1'), base).workload.gate;
    assert.equal(gate?.reason, DEPLOYMENT_REASON.historyMissing);
    assert.match(gate?.message ?? '', /web-inplace-previous.*is gone/);
  });

  it('the first pod update: the template kept in the history, then the ReplicaSet takes the target marked with its hash (pod-template-hash kept)', async () => {
    const o = deploymentObserved(held(), [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'), base);
    const { api, writes } = recording();
    await markReplicaSet(reviewer, api, asked, o, round(o), log);
    assert.deepEqual(writes.map((w) => w.what), ['history', 'rs template']);
    const t = writes[1].template as Written;
    assert.equal(t.spec.containers[0].image, 'app:v2');
    assert.deepEqual(t.metadata.annotations, { [POD_TEMPLATE_ANNOTATION]: target });
    assert.equal(t.metadata.labels['pod-template-hash'], 'aaa');
  });

  it('marked already: with this target nothing is written; with an earlier one only the ReplicaSet (the history keeps its pods\' template); nothing when no pod is to be updated, it is handed over, or its revisionHistoryLimit is 0', async () => {
    const cases: [DeploymentObserved, Plan | undefined, string[]][] = [];
    const same = deploymentObserved(held(), [marked(), history()], four('app:v1'), base);
    cases.push([same, undefined, []]);
    const earlier = deploymentObserved(held(), [marked('tearlier', template('app:v1.5')), history()], four('app:v1'), base);
    cases.push([earlier, undefined, ['rs template']]);
    const fresh = deploymentObserved(held(), [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'), base);
    cases.push([fresh, { actions: [], status: { ...round(fresh).status, phase: 'Failed', podsInFlight: [] } }, []]);
    cases.push([{ ...fresh, handOver: 'spec.containers[app].env changed' }, undefined, []]);
    const limit0 = held();
    limit0.spec = { ...limit0.spec, revisionHistoryLimit: 0 } as typeof limit0.spec;
    cases.push([deploymentObserved(limit0, [replicaSet('web-aaa', 'aaa', V1T, 4)], four('app:v1'), base), undefined, []]);
    for (const [o, p, want] of cases) {
      const { api, writes } = recording();
      await markReplicaSet(reviewer, api, asked, o, p ?? round(o), log);
      assert.deepEqual(writes.map((w) => w.what), want);
    }
  });

  it("finished while marked: the ReplicaSet takes the Deployment's template exactly (no history write), then the release; a failed first pod sets the ReplicaSet back, then the Deployment", async () => {
    const done = deploymentObserved(held(), [marked(), history()], four('app:v2', { [POD_TEMPLATE_ANNOTATION]: target }), base);
    const a = recording();
    await finishDeployment(reviewer, a.api, asked, done, round(done), log);
    assert.deepEqual(a.writes.map((w) => w.what), ['rs template', 'release']);
    assert.deepEqual(withoutHash(a.writes[0].template as never), V2T);
    const d = deploymentObserved(deployment(template('app:crash'), { paused: true, held: true }), [marked(templateHash(template('app:crash') as never), template('app:crash')), history()], four('app:v1'), base);
    const failed = { name: restartName('web', 'web-0', 3), pod: 'web-0', revisionHash: templateHash(template('app:crash') as never), revisionNumber: 3, phase: 'Failed' as const, failure: { container: 'app', reason: 'RolledBack: exited', exitCode: 3 } };
    const b = recording();
    await finishDeployment(reviewer, b.api, asked, d, round(d, [failed]), log);
    assert.deepEqual(b.writes.map((w) => w.what), ['rs template', 'template back', 'release']);
    assert.deepEqual(withoutHash(b.writes[0].template as never), V1T, "the ReplicaSet's template back to its pods'");
    assert.equal((b.writes[0].template as Written).metadata.labels['pod-template-hash'], 'aaa');
    assert.deepEqual(b.writes[1].template, V1T);
  });
});
