// The ContainerRestart CRD on a real kube-apiserver: accepted objects, objects the schema and CEL rules reject
// (with the API server's own message), and the printer columns of `kubectl get crs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { AgentError } from '../../src/errors.js';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import type { ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { kubeBinDir } from '../support/private-apiserver.js';
import { applyCrd, createNamespace, deleteNamespace, testCluster, type TestCluster } from '../support/kube-cluster.js';

describe('ContainerRestart CRD validation (real kube-apiserver)', function () {
  this.timeout(120_000);
  let cluster: TestCluster;
  let api: ContainerRestartApi;
  let ns: string;

  const obj = (name: string, spec: Record<string, unknown>): ContainerRestart => ({
    apiVersion: 'inplace-agent.io/v1alpha1',
    kind: 'ContainerRestart',
    metadata: { name, namespace: ns },
    spec: { podName: 'web', containers: [{ name: 'app' }], ...spec } as ContainerRestart['spec'],
  });

  /** Creates the object and returns the API server's refusal (InvalidArgument). */
  const rejected = async (o: ContainerRestart): Promise<string> => {
    try {
      await api.create(o);
    } catch (err) {
      assert.ok(AgentError.is(err, 'InvalidArgument'), `expected a 422, got ${String(err)}`);
      return err.message;
    }
    assert.fail(`the API server accepted ${JSON.stringify(o.spec)}`);
  };

  before(async function () {
    cluster = await testCluster(this);
    await applyCrd(cluster.kc);
    api = new ContainerRestartApi(cluster.kc);
    ns = await createNamespace(cluster.kc, 'kcrd-crd');
  });
  after(async () => {
    if (ns) await deleteNamespace(cluster.kc, ns);
    await cluster?.close();
  });

  it('accepts a full, valid object and fills the strategy defaults', async () => {
    const cr = await api.create(
      obj('ok', {
        containers: [{ name: 'app', image: 'registry.local/web:1.4.2' }, { name: 'sidecar' }],
        strategy: { gracePeriodSeconds: 20, drainSeconds: 5, minReadySeconds: 5 },
        activeDeadlineSeconds: 600,
        ttlSecondsAfterFinished: 60,
      }),
    );
    assert.ok(cr.metadata.uid);
    assert.equal(cr.spec.strategy?.failurePolicy, 'Rollback');
    assert.equal(cr.spec.strategy?.ordered, true);
  });

  it('rejects duplicate container names (CEL rule)', async () => {
    const msg = await rejected(obj('dup', { containers: [{ name: 'app' }, { name: 'side' }, { name: 'app', image: 'x:1' }] }));
    assert.match(msg, /spec\.containers.*container names must be unique/);
  });

  it('rejects every number out of its bounds', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ strategy: { gracePeriodSeconds: 3601 } }, /spec\.strategy\.gracePeriodSeconds.*less than or equal to 3600/],
      [{ strategy: { gracePeriodSeconds: -1 } }, /spec\.strategy\.gracePeriodSeconds.*greater than or equal to 0/],
      [{ strategy: { minReadySeconds: 5000 } }, /spec\.strategy\.minReadySeconds.*less than or equal to 3600/],
      [{ strategy: { drainSeconds: 601 } }, /spec\.strategy\.drainSeconds.*less than or equal to 600/],
      [{ activeDeadlineSeconds: 0 }, /spec\.activeDeadlineSeconds.*greater than or equal to 1/],
      [{ ttlSecondsAfterFinished: -5 }, /spec\.ttlSecondsAfterFinished.*greater than or equal to 0/],
    ];
    for (const [i, [spec, re]] of cases.entries()) assert.match(await rejected(obj(`num-${i}`, spec)), re);
  });

  it('unclaimedTTLSeconds: 3600 by default; 1 and 604800 accepted (the bounds), 0 and 604801 rejected (one past); allowStaticPod a boolean', async () => {
    assert.equal((await api.create(obj('ttl-default', {}))).spec.unclaimedTTLSeconds, 3600);
    assert.equal((await api.create(obj('ttl-min', { unclaimedTTLSeconds: 1 }))).spec.unclaimedTTLSeconds, 1);
    assert.equal((await api.create(obj('ttl-max', { unclaimedTTLSeconds: 604800 }))).spec.unclaimedTTLSeconds, 604800);
    assert.match(await rejected(obj('ttl-zero', { unclaimedTTLSeconds: 0 })), /spec\.unclaimedTTLSeconds.*greater than or equal to 1/);
    assert.match(await rejected(obj('ttl-over', { unclaimedTTLSeconds: 604801 })), /spec\.unclaimedTTLSeconds.*less than or equal to 604800/);
    assert.match(await rejected(obj('ttl-text', { unclaimedTTLSeconds: '60' })), /spec\.unclaimedTTLSeconds.*integer/);
    assert.match(await rejected(obj('static-text', { allowStaticPod: 'yes' })), /spec\.allowStaticPod.*boolean/);
  });

  it('rejects an unknown failure policy, an empty container list and a bad pod name', async () => {
    assert.match(await rejected(obj('fp', { strategy: { failurePolicy: 'Retry' } })), /spec\.strategy\.failurePolicy.*Unsupported value: "Retry"/);
    assert.match(await rejected(obj('none', { containers: [] })), /spec\.containers.*should have at least 1 items/);
    assert.match(await rejected(obj('pod', { podName: 'Web_1' })), /spec\.podName.*should match/);
  });

  it('keeps the spec immutable after create (CEL transition rule)', async () => {
    const cr = await api.create(obj('immutable', { containers: [{ name: 'app', image: 'registry.local/web:1' }] }));
    const { CustomObjectsApi } = await import('@kubernetes/client-node');
    const custom = cluster.kc.makeApiClient(CustomObjectsApi);
    const changed = { ...cr, spec: { ...cr.spec, containers: [{ name: 'app', image: 'registry.local/web:2' }] } };
    const err = await custom
      .replaceNamespacedCustomObject({ group: 'inplace-agent.io', version: 'v1alpha1', plural: 'containerrestarts', namespace: ns, name: 'immutable', body: changed })
      .then(() => undefined, (e: unknown) => e as { code?: number; body?: string });
    assert.ok(err, 'the API server accepted a spec change');
    assert.equal(err.code, 422);
    assert.match(String(err.body), /spec is immutable/);
    // Metadata is not the spec: labels can still change.
    await custom.replaceNamespacedCustomObject({ group: 'inplace-agent.io', version: 'v1alpha1', plural: 'containerrestarts', namespace: ns, name: 'immutable', body: { ...cr, metadata: { ...cr.metadata, labels: { team: 'shop' } } } });
    assert.equal((await api.get(ns, 'immutable')).spec.containers[0].image, 'registry.local/web:1');
  });

  it('shows printer columns in kubectl get crs', async () => {
    const bin = kubeBinDir();
    assert.ok(bin, 'kubectl is built with the cluster (scripts/build-deps kubernetes)');
    const withStatus = await api.get(ns, 'ok');
    await api.replaceStatus(withStatus, { phase: 'Running', nodeName: 'node-x', summary: 'app:Stopping,sidecar:Waiting' });
    const out = execFileSync(path.join(bin as string, 'kubectl'), ['--kubeconfig', cluster.kubeconfig, 'get', 'crs', '-n', ns, 'ok'], { encoding: 'utf8' });
    const [header, row] = out.trim().split('\n');
    assert.deepEqual(header.split(/\s+/), ['NAME', 'POD', 'CONTAINERS', 'PHASE', 'NODE', 'AGE']);
    assert.deepEqual(row.split(/\s+/).slice(0, 5), ['ok', 'web', 'app:Stopping,sidecar:Waiting', 'Running', 'node-x']);
  });
});
