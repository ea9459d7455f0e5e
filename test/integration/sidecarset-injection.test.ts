// SidecarSet injection by deploy/sidecarset-injection.yaml (a MutatingAdmissionPolicy, no webhook server) on the
// real cluster: pods created with the selected label get the SidecarSet's container, native sidecar and volume and
// the annotation naming it and its generation, and start; other pods, pods of other namespaces and pods that already
// have a container of a sidecar's name are left as they were sent.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { injectedAnnotation, SCS_GROUP, SCS_PLURAL, SCS_VERSION, type SidecarSetSpec } from '../../src/controllers/sidecarset/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { applyCrds } from '../support/kube-apply.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { kubeTest, until } from '../support/kube-test.js';
import { applyDeployFiles, deleteClusterRules, failure, userWithRules } from '../support/kube-users.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';

const env = kubeEnv();
const V1 = env.sandbox.images.appV1;
const SCS = { group: SCS_GROUP, version: SCS_VERSION, plural: SCS_PLURAL };

describe('SidecarSet injection (MutatingAdmissionPolicy, real cluster)', function () {
  this.timeout(180_000);
  let core: k8s.CoreV1Api;
  let custom: k8s.CustomObjectsApi;
  let kc: k8s.KubeConfig;
  let ns = '';
  let otherNs = '';
  const name = `mesh-${randomBytes(3).toString('hex')}`;
  const annotation = injectedAnnotation(name);

  const container = (n: string, image = V1): k8s.V1Container => ({ name: n, image, args: ['sh', '-c', TRAP_TERM_APP] });
  const podBody = (podName: string, labels: Record<string, string>, containers: k8s.V1Container[], initContainers?: k8s.V1Container[]): k8s.V1Pod => ({
    metadata: { name: podName, labels },
    spec: { terminationGracePeriodSeconds: 2, containers, ...(initContainers ? { initContainers } : {}) },
  });
  const create = (namespace: string, body: k8s.V1Pod, dryRun = false) => core.createNamespacedPod({ namespace, body, dryRun: dryRun ? 'All' : undefined });
  const names = (cs?: k8s.V1Container[]) => (cs ?? []).map((c) => c.name);

  before(async function () {
    ({ kc, core } = await kubeTest(this));
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await applyCrds(kc, ['sidecarset.yaml']);
    await applyDeployFiles(kc, ['sidecarset-injection.yaml']);
    ns = await createNamespace(kc, 'scsinj');
    otherNs = await createNamespace(kc, 'scsinj-other');
    // Only this test's namespace: other suites on the cluster make app=web pods too.
    const spec: SidecarSetSpec = {
      selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['db'] }] },
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      containers: [{ ...container('proxy'), volumeMounts: [{ name: 'mesh-conf', mountPath: '/etc/mesh' }] }],
      initContainers: [{ ...container('mesh-init'), restartPolicy: 'Always' }],
      volumes: [{ name: 'mesh-conf', emptyDir: {} }],
    };
    await custom.createClusterCustomObject({ ...SCS, body: { apiVersion: `${SCS_GROUP}/${SCS_VERSION}`, kind: 'SidecarSet', metadata: { name }, spec } });
    // The API server reads the policy's parameters from a cache: wait until a dry run shows the new SidecarSet.
    await until('the policy to see the SidecarSet', 30_000, async () => {
      const p = await create(ns, podBody('probe', { app: 'web' }, [container('app')]), true);
      return p.metadata?.annotations?.[annotation] ? true : undefined;
    });
  });

  after(async () => {
    await custom?.deleteClusterCustomObject({ ...SCS, name }).catch(() => undefined);
    if (ns) await deleteNamespace(kc, ns);
    if (otherNs) await deleteNamespace(kc, otherNs);
    if (ns) await deleteClusterRules(kc, ns);
  });

  it('injects the container, the native sidecar (first, restartPolicy Always) and the volume into a matching pod, which starts', async () => {
    const p = await create(ns, podBody('web-1', { app: 'web' }, [container('app')], [{ ...container('setup'), args: ['true'] }]));
    assert.deepEqual(names(p.spec?.containers), ['app', 'proxy']);
    assert.deepEqual(names(p.spec?.initContainers), ['mesh-init', 'setup']);
    assert.equal(p.spec?.initContainers?.[0]?.restartPolicy, 'Always');
    assert.equal(p.spec?.initContainers?.[1]?.restartPolicy, undefined);
    assert.ok(p.spec?.volumes?.some((v) => v.name === 'mesh-conf' && v.emptyDir), JSON.stringify(p.spec?.volumes));
    assert.equal(p.spec?.containers[1]?.volumeMounts?.find((m) => m.name === 'mesh-conf')?.mountPath, '/etc/mesh');
    assert.equal(p.metadata?.annotations?.[annotation], '1');
    const ready = await until('web-1 Ready with its sidecars running', 90_000, async () => {
      const cur = await core.readNamespacedPod({ name: 'web-1', namespace: ns });
      return cur.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? cur : undefined;
    });
    assert.deepEqual(ready.status?.containerStatuses?.map((s) => `${s.name}:${s.ready}`).sort(), ['app:true', 'proxy:true']);
    assert.equal(ready.status?.initContainerStatuses?.find((s) => s.name === 'mesh-init')?.started, true);
  });

  it('leaves alone a pod without the label, one the selector excludes, and a matching pod of another namespace', async () => {
    for (const [namespace, labels] of [[ns, { app: 'api' }], [ns, { app: 'web', tier: 'db' }], [otherNs, { app: 'web' }]] as const) {
      const p = await create(namespace, podBody('plain', labels, [container('app')]));
      assert.deepEqual(names(p.spec?.containers), ['app'], `${namespace} ${JSON.stringify(labels)}`);
      assert.equal(p.spec?.initContainers, undefined);
      assert.ok(!p.spec?.volumes?.some((v) => v.name === 'mesh-conf'));
      assert.equal(p.metadata?.annotations?.[annotation], undefined);
      await core.deleteNamespacedPod({ name: 'plain', namespace, gracePeriodSeconds: 0 });
      await until('pod plain gone', 60_000, () => core.readNamespacedPod({ name: 'plain', namespace }).then(() => undefined, () => true));
    }
  });

  it('does not duplicate a container the pod already has: such a pod is left as sent (a conflict)', async () => {
    const own = { ...container('proxy'), env: [{ name: 'OWN', value: '1' }] };
    const p = await create(ns, podBody('web-own', { app: 'web' }, [container('app'), own]));
    assert.deepEqual(names(p.spec?.containers), ['app', 'proxy']);
    assert.deepEqual(p.spec?.containers[1]?.env?.map((e) => `${e.name}=${e.value}`), ['OWN=1']);
    assert.equal(p.spec?.initContainers, undefined);
    assert.equal(p.metadata?.annotations?.[annotation], undefined);
  });

  it('is idempotent: a pod that already carries the annotation gets nothing more', async () => {
    const body = podBody('web-again', { app: 'web' }, [container('app')]);
    body.metadata!.annotations = { [annotation]: '1' };
    const p = await create(ns, body, true);
    assert.deepEqual(names(p.spec?.containers), ['app']);
    assert.equal(p.spec?.initContainers, undefined);
  });

  it('refuses a SidecarSet from a user who cannot patch pods in every namespace, and takes it from one who can', async () => {
    const scsRule = { apiGroups: [SCS_GROUP], resources: [SCS_PLURAL], verbs: ['create'] };
    const podRule = { apiGroups: [''], resources: ['pods'], verbs: ['patch'] };
    const narrow = await userWithRules(kc, ns, 'narrow', [podRule], [scsRule]);
    const wide = await userWithRules(kc, ns, 'wide', [], [scsRule, podRule]);
    const body = (n: string) => ({
      apiVersion: `${SCS_GROUP}/${SCS_VERSION}`,
      kind: 'SidecarSet',
      metadata: { name: n },
      spec: { selector: { matchLabels: { app: 'nothing-here' } }, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } }, containers: [container('proxy')] },
    });
    const refusal = await until('the narrow user to be authorized to create SidecarSets, and refused by the policy', 20_000, async () => {
      try {
        await narrow.kc.makeApiClient(k8s.CustomObjectsApi).createClusterCustomObject({ ...SCS, body: body(`${name}-narrow`), dryRun: 'All' });
        return 'accepted';
      } catch (err) {
        const f = failure(err);
        return /ValidatingAdmissionPolicy/.test(f.message) ? f.message : undefined;
      }
    });
    assert.match(refusal, /writing one needs patch on pods in all namespaces, which user system:serviceaccount:scsinj-\w+:narrow may not do/);
    const made = await until('the wide user to be authorized', 20_000, async () =>
      wide.kc.makeApiClient(k8s.CustomObjectsApi).createClusterCustomObject({ ...SCS, body: body(`${name}-wide`), dryRun: 'All' }).then((o) => o as { metadata: { name: string } }, () => undefined),
    );
    assert.equal(made.metadata.name, `${name}-wide`);
  });
});
