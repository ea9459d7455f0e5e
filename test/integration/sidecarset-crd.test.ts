// The SidecarSet CRD as shipped in deploy/crds, on a real kube-apiserver: cluster scope, defaults, the OpenAPI and
// CEL rules (names unique across containers and initContainers, common app names refused unless asked, native
// sidecars only, selector operators, maxUnavailable as an integer or a percent, bounded sizes), printer columns.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ApiextensionsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { SCS_GROUP, SCS_PLURAL, SCS_VERSION, type SidecarSet } from '../../src/controllers/sidecarset/types.js';
import { applyCrds } from '../support/kube-apply.js';
import { testCluster, type TestCluster } from '../support/kube-cluster.js';

describe('SidecarSet CRD (real kube-apiserver)', function () {
  this.timeout(120_000);
  let cluster: TestCluster;
  let api: CustomObjectsApi;
  const run = randomBytes(3).toString('hex');
  const made: string[] = [];
  const base = { group: SCS_GROUP, version: SCS_VERSION, plural: SCS_PLURAL };
  const proxy = { name: 'proxy', image: 'busybox:1' };
  const create = async (name: string, spec: Record<string, unknown>): Promise<SidecarSet> => {
    const full = `${name}-${run}`;
    const r = (await api.createClusterCustomObject({ ...base, body: { apiVersion: `${SCS_GROUP}/${SCS_VERSION}`, kind: 'SidecarSet', metadata: { name: full }, spec } })) as SidecarSet;
    made.push(full);
    return r;
  };
  const refusal = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
    } catch (err) {
      return String((err as { body?: unknown }).body ?? err);
    }
    throw new Error('the API server accepted it');
  };
  const selector = { matchLabels: { app: 'web' } };

  before(async function () {
    cluster = await testCluster(this);
    api = cluster.kc.makeApiClient(CustomObjectsApi);
    await applyCrds(cluster.kc, ['sidecarset.yaml']);
  });

  after(async () => {
    for (const name of made) await api.deleteClusterCustomObject({ ...base, name }).catch(() => undefined);
    await cluster?.close();
  });

  it('is cluster-scoped and fills in the defaults: maxUnavailable 1, not paused, partition 0, drain false, prewarm false, failurePolicy Rollback', async () => {
    const crd = await cluster.kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: `${SCS_PLURAL}.${SCS_GROUP}` });
    assert.equal(crd.spec.scope, 'Cluster');
    const r = await create('defaults', { selector, containers: [proxy] });
    assert.equal(r.metadata.generation, 1);
    assert.deepEqual(r.spec.updateStrategy, { maxUnavailable: 1, paused: false, partition: 0, drain: false, prewarm: false });
    assert.equal(r.spec.failurePolicy, 'Rollback');
    assert.equal(r.spec.allowCommonNames, false);
  });

  it('keeps the container fields it knows, and the probes and resources whole', async () => {
    const full = {
      ...proxy,
      command: ['sh', '-c', 'sleep 1'],
      env: [{ name: 'A', value: '1' }],
      ports: [{ name: 'admin', containerPort: 15000, protocol: 'TCP' }],
      volumeMounts: [{ name: 'mesh', mountPath: '/etc/mesh', readOnly: true }],
      resources: { requests: { cpu: '10m', memory: '16Mi' } },
      readinessProbe: { tcpSocket: { port: 15000 }, periodSeconds: 2 },
    };
    const r = await create('full', { selector, containers: [full], volumes: [{ name: 'mesh', emptyDir: {} }] });
    assert.deepEqual(r.spec.containers?.[0], full);
    assert.deepEqual(r.spec.volumes, [{ name: 'mesh', emptyDir: {} }]);
  });

  it('refuses a name used twice, by two containers or by a container and an initContainer', async () => {
    assert.match(await refusal(create('dup', { selector, containers: [proxy, proxy] })), /spec\.containers\[1\]: Duplicate value/);
    assert.match(
      await refusal(create('dup2', { selector, containers: [proxy], initContainers: [{ ...proxy, restartPolicy: 'Always' }] })),
      /a name is used by both a container and an initContainer/,
    );
    assert.match(await refusal(create('dupvol', { selector, containers: [proxy], volumes: [{ name: 'v', emptyDir: {} }, { name: 'v', emptyDir: {} }] })), /spec\.volumes\[1\]: Duplicate value/);
  });

  it('refuses common application names unless allowCommonNames, and an empty SidecarSet', async () => {
    assert.match(await refusal(create('common', { selector, containers: [{ name: 'app', image: 'busybox:1' }] })), /would clash with the application containers/);
    const allowed = await create('common-ok', { selector, allowCommonNames: true, containers: [{ name: 'app', image: 'busybox:1' }] });
    assert.equal(allowed.spec.containers?.[0]?.name, 'app');
    assert.match(await refusal(create('empty', { selector })), /needs at least one container or initContainer/);
    assert.match(await refusal(create('noimage', { selector, containers: [{ name: 'proxy' }] })), /spec\.containers\[0\]\.image: Required value/);
  });

  it('takes native sidecars only: an initContainer must say restartPolicy Always', async () => {
    const ok = await create('native', { selector, initContainers: [{ ...proxy, restartPolicy: 'Always' }] });
    assert.equal(ok.spec.initContainers?.[0]?.restartPolicy, 'Always');
    assert.match(await refusal(create('plain-init', { selector, initContainers: [proxy] })), /spec\.initContainers\[0\]\.restartPolicy: Required value/);
    assert.match(await refusal(create('never', { selector, initContainers: [{ ...proxy, restartPolicy: 'Never' }] })), /Unsupported value: \\"Never\\"/);
  });

  it('takes maxUnavailable as an integer of at least 1 or a percent, and refuses anything else', async () => {
    assert.equal((await create('pct', { selector, containers: [proxy], updateStrategy: { maxUnavailable: '25%' } })).spec.updateStrategy?.maxUnavailable, '25%');
    for (const bad of [0, '0%', '101%', 'half']) {
      const msg = await refusal(create(`bad-${String(bad).replace(/[^a-z0-9]/g, 'x')}`, { selector, containers: [proxy], updateStrategy: { maxUnavailable: bad } }));
      assert.match(msg, /an integer of at least 1, or a percent/);
    }
  });

  it('checks selector operators and bounds sizes', async () => {
    assert.match(await refusal(create('op', { selector: { matchExpressions: [{ key: 'a', operator: 'Like', values: ['x'] }] }, containers: [proxy] })), /Unsupported value: \\"Like\\"/);
    assert.match(await refusal(create('novals', { selector: { matchExpressions: [{ key: 'a', operator: 'In' }] }, containers: [proxy] })), /In and NotIn need values/);
    assert.match(await refusal(create('vals', { selector: { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }, containers: [proxy] })), /Exists and DoesNotExist take none/);
    const nine = Array.from({ length: 9 }, (_, i) => ({ name: `s${i}`, image: 'busybox:1' }));
    assert.match(await refusal(create('many', { selector, containers: nine })), /spec\.containers: Too many: 9: must have at most 8 items/);
    assert.match(await refusal(create('x'.repeat(60), { selector, containers: [proxy] })), /at most 63 characters/);
  });

  it('takes updateStrategy.prewarm only with selector.matchLabels (an ImagePrewarm selects pods by labels)', async () => {
    assert.equal((await create('warm', { selector, containers: [proxy], updateStrategy: { prewarm: true } })).spec.updateStrategy?.prewarm, true);
    const exprOnly = { matchExpressions: [{ key: 'app', operator: 'Exists' }] };
    assert.match(await refusal(create('warm-expr', { selector: exprOnly, containers: [proxy], updateStrategy: { prewarm: true } })), /updateStrategy\.prewarm needs selector\.matchLabels/);
    assert.equal((await create('cold-expr', { selector: exprOnly, containers: [proxy], updateStrategy: { prewarm: false } })).spec.updateStrategy?.prewarm, false);
  });

  it('shows Matched, Injected, Updated and Ready columns, and Older-Spec with -o wide', async () => {
    const crd = await cluster.kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: `${SCS_PLURAL}.${SCS_GROUP}` });
    const cols = crd.spec.versions[0]?.additionalPrinterColumns?.map((c) => `${c.name}=${c.jsonPath}`);
    assert.deepEqual(cols?.slice(0, 4), ['Matched=.status.matchedPods', 'Injected=.status.injectedPods', 'Updated=.status.updatedPods', 'Ready=.status.readyPods']);
    const older = crd.spec.versions[0]?.additionalPrinterColumns?.find((c) => c.name === 'Older-Spec');
    assert.deepEqual([older?.jsonPath, older?.priority], ['.status.olderSpecPods', 1]);
  });
});
