// The InPlaceRollout CRD as shipped in deploy/crds, on a real kube-apiserver: defaults, the OpenAPI and CEL
// rules (maxUnavailable as an integer or a percent, an immutable targetRef), and the printer columns' fields. And
// bounds that hold end to end (issue 28, finding 4), each at its edge and one past it: a rollout's deadline fits
// the ContainerRestart it makes, its ContainerRestart names stay valid and distinct for the longest names, and its
// status, cut by the agent's own boundStatus, is one the status subresource takes.
import assert from 'node:assert/strict';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { CR_GROUP, CR_PLURAL, CR_VERSION } from '../../src/controllers/container-restart/types.js';
import { restartName } from '../../src/controllers/rollout/plan.js';
import { restartObject } from '../../src/controllers/rollout/reconcile.js';
import { boundStatus, MAX_FAILURES, MAX_PODS_IN_FLIGHT, MAX_STATUS_TEXT } from '../../src/controllers/rollout/status-bounds.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, type InPlaceRollout, type InPlaceRolloutStatus } from '../../src/controllers/rollout/types.js';
import { applyCrds } from '../support/kube-apply.js';
import { createNamespace, deleteNamespace, testCluster, type TestCluster } from '../support/kube-cluster.js';

describe('InPlaceRollout CRD (real kube-apiserver)', function () {
  this.timeout(120_000);
  let cluster: TestCluster;
  let api: CustomObjectsApi;
  let ns = '';
  const base = () => ({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns });
  const create = (name: string, spec: Record<string, unknown>) =>
    api.createNamespacedCustomObject({ ...base(), body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name }, spec } }) as Promise<InPlaceRollout>;
  const refusal = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
    } catch (err) {
      return String((err as { body?: unknown }).body ?? err);
    }
    throw new Error('the API server accepted it');
  };
  const target = { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' };

  before(async function () {
    cluster = await testCluster(this);
    api = cluster.kc.makeApiClient(CustomObjectsApi);
    await applyCrds(cluster.kc, ['inplacerollout.yaml', 'containerrestart.yaml']);
    ns = await createNamespace(cluster.kc, 'iprcrd');
  });

  after(async () => {
    if (ns) await deleteNamespace(cluster.kc, ns);
    await cluster?.close();
  });

  it('fills in the defaults: maxUnavailable 1, no prewarm (it needs the opt-in fleet RBAC), fallback Pause, failurePolicy Rollback, a 600 s deadline', async () => {
    const r = await create('defaults', { targetRef: target });
    assert.equal(r.spec.maxUnavailable, 1);
    assert.equal(r.spec.prewarm, false);
    assert.equal(r.spec.paused, false);
    assert.equal(r.spec.partition, 0);
    assert.equal(r.spec.fallback, 'Pause');
    assert.equal(r.spec.progressDeadlineSeconds, 600);
    assert.equal(r.spec.strategy?.failurePolicy, 'Rollback');
  });

  it('takes maxUnavailable as an integer of at least 1 or a percent, and refuses anything else', async () => {
    assert.equal((await create('pct', { targetRef: target, maxUnavailable: '25%' })).spec.maxUnavailable, '25%');
    assert.equal((await create('three', { targetRef: target, maxUnavailable: 3 })).spec.maxUnavailable, 3);
    for (const bad of [0, '0%', '101%', 'half', '-1']) {
      assert.match(await refusal(create(`bad-${String(bad).replace(/[^a-z0-9]/g, 'x')}`, { targetRef: target, maxUnavailable: bad })), /an integer of at least 1, or a percent/);
    }
  });

  it('refuses other targets, and a change of targetRef', async () => {
    assert.match(await refusal(create('rs', { targetRef: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web' } })), /spec\.targetRef\.kind: Unsupported value: \\"ReplicaSet\\"/);
    assert.match(await refusal(create('nover', { targetRef: { kind: 'StatefulSet', name: 'web' } })), /apiVersion: Required value/);
    await create('fixed', { targetRef: target });
    const patch = api.patchNamespacedCustomObject({ ...base(), name: 'fixed', body: { spec: { targetRef: { ...target, name: 'other' } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    assert.match(await refusal(patch), /targetRef is immutable/);
    const paused = (await api.patchNamespacedCustomObject({ ...base(), name: 'fixed', body: { spec: { paused: true } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch))) as InPlaceRollout;
    assert.equal(paused.spec.paused, true, 'policy fields may change');
  });

  it('refuses unknown enum values for fallback and failurePolicy', async () => {
    assert.match(await refusal(create('fb', { targetRef: target, fallback: 'Delete' })), /spec\.fallback: Unsupported value: \\"Delete\\"/);
    assert.match(await refusal(create('fp', { targetRef: target, strategy: { failurePolicy: 'Ignore' } })), /spec\.strategy\.failurePolicy: Unsupported value: \\"Ignore\\"/);
  });

  /** The ContainerRestart the agent would create for pod of rollout r, as a dry run: the API server's answer. */
  const restartFor = (r: InPlaceRollout, pod: string) => {
    const body = restartObject(r, { kind: 'restart', name: restartName(r.metadata.name, pod, 7), pod, podUid: 'p', containers: [{ name: 'app', image: 'registry.example/app:v2' }], revisionHash: 'web-7', revisionNumber: 7 });
    return api.createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, body: { ...body, metadata: { ...body.metadata, namespace: ns } }, dryRun: 'All' });
  };

  it("minReadySeconds + progressDeadlineSeconds: at 86400 taken, and its ContainerRestart too; one past refused at admission", async () => {
    const edge = await create('deadline-edge', { targetRef: target, progressDeadlineSeconds: 82_800, strategy: { minReadySeconds: 3600 } });
    assert.equal(edge.spec.progressDeadlineSeconds, 82_800);
    await restartFor(edge, 'web-0');
    const alone = await create('deadline-alone', { targetRef: target, progressDeadlineSeconds: 86_400 });
    await restartFor(alone, 'web-0');
    const past = /strategy\.minReadySeconds \+ progressDeadlineSeconds must be at most 86400/;
    assert.match(await refusal(create('deadline-past', { targetRef: target, progressDeadlineSeconds: 82_801, strategy: { minReadySeconds: 3600 } })), past);
    assert.match(await refusal(create('deadline-past2', { targetRef: target, progressDeadlineSeconds: 86_400, strategy: { minReadySeconds: 1 } })), past);
    // And on update: a change that would take it past is refused too.
    const patch = api.patchNamespacedCustomObject({ ...base(), name: 'deadline-edge', body: { spec: { progressDeadlineSeconds: 82_801 } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    assert.match(await refusal(patch), past);
  });

  it('the longest rollout and pod names: ContainerRestart names within 253 characters, distinct, and taken by the API server', async () => {
    const long = `${'r'.repeat(240)}.long`.slice(0, 253);
    const r = await create(long, { targetRef: target });
    const pods = [`${'p'.repeat(60)}-1`, `${'p'.repeat(60)}-2`];
    const names = pods.map((p) => restartName(r.metadata.name, p, 7));
    assert.notEqual(names[0], names[1], 'one name per pod');
    for (const p of pods) await restartFor(r, p);
  });

  /** Writes status through the status subresource (a merge patch: the coordinators may write it too). */
  const writeStatus = (name: string, status: InPlaceRolloutStatus) =>
    api.patchNamespacedCustomObjectStatus({ ...base(), name, body: { status } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));

  it("status at each cap is taken; one past each is refused, and the agent's boundStatus of it is taken", async () => {
    await create('status', { targetRef: target });
    const text = (n: number) => 'm'.repeat(n);
    const failures = (n: number) => Array.from({ length: n }, (_, i) => ({ pod: `web-${i}`, reason: text(MAX_STATUS_TEXT) }));
    const inFlight = (n: number) => Array.from({ length: n }, (_, i) => `web-${i}`);
    await writeStatus('status', { message: text(MAX_STATUS_TEXT), failures: failures(MAX_FAILURES), podsInFlight: inFlight(MAX_PODS_IN_FLIGHT) });
    const past: [string, InPlaceRolloutStatus, RegExp][] = [
      ['message', { message: text(MAX_STATUS_TEXT + 1) }, /status\.message: Too long/],
      ['failures', { failures: failures(MAX_FAILURES + 1) }, /status\.failures: Too many/],
      ['failure reason', { failures: [{ pod: 'web-0', reason: text(MAX_STATUS_TEXT + 1) }] }, /status\.failures\[0\]\.reason: Too long/],
      ['podsInFlight', { podsInFlight: inFlight(MAX_PODS_IN_FLIGHT + 1) }, /status\.podsInFlight: Too many/],
      ['condition message', { conditions: [{ type: 'Progressing', status: 'True', reason: 'Updating', message: text(MAX_STATUS_TEXT + 1), lastTransitionTime: new Date().toISOString() }] }, /status\.conditions\[0\]\.message: Too long/],
    ];
    for (const [what, status, message] of past) {
      assert.match(await refusal(writeStatus('status', status)), message, what);
      await writeStatus('status', boundStatus(status));
    }
  });
});
