// The InPlaceRollout CRD as shipped in deploy/crds, on a real kube-apiserver: defaults, the OpenAPI and CEL
// rules (maxUnavailable as an integer or a percent, an immutable targetRef), and the printer columns' fields.
import assert from 'node:assert/strict';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, type InPlaceRollout } from '../../src/rollout/types.js';
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
    await applyCrds(cluster.kc, ['inplacerollout.yaml']);
    ns = await createNamespace(cluster.kc, 'iprcrd');
  });

  after(async () => {
    if (ns) await deleteNamespace(cluster.kc, ns);
    await cluster?.close();
  });

  it('fills in the defaults: maxUnavailable 1, prewarm, fallback Pause, failurePolicy Rollback, a 600 s deadline', async () => {
    const r = await create('defaults', { targetRef: target });
    assert.equal(r.spec.maxUnavailable, 1);
    assert.equal(r.spec.prewarm, true);
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
});
