// A SidecarSet's new sidecar image reaches running pods in place, through the DaemonSet's agents as deploy/ ships
// them: a Deployment of 2 that knows nothing of the SidecarSet gets the sidecar at creation; after the image bump
// the same pods (same UIDs) run the new sidecar and native sidecar (a restartable init container), their app
// containers untouched (same container ID, no restart),
// at most maxUnavailable (1) sidecar upgrades at once, the Deployment's template untouched, and the SidecarSet's
// status says so.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { imageMatches } from '../../src/image-ref.js';
import { SIDECARSET_LABEL } from '../../src/sidecarset/sidecarset-api.js';
import { injectedAnnotation, SCS_GROUP, SCS_PLURAL, SCS_VERSION, type SidecarSet, type SidecarSetSpec } from '../../src/sidecarset/types.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/kube/container-restart/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { applyCrds } from '../support/kube-apply.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { kubeTest, until } from '../support/kube-test.js';
import { applyDeployFiles } from '../support/kube-users.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';
import { agentOnEveryNode } from '../support/rollout-wait.js';

const env = kubeEnv();
const V1 = env.sandbox.images.appV1;
const V2 = env.sandbox.images.appV2;
const SCS = { group: SCS_GROUP, version: SCS_VERSION, plural: SCS_PLURAL };
const isReady = (p: k8s.V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
/** A container's status by name, a native sidecar's (initContainerStatuses) too. */
const status = (p: k8s.V1Pod, c: string) => [...(p.status?.containerStatuses ?? []), ...(p.status?.initContainerStatuses ?? [])].find((s) => s.name === c);

describe('SidecarSet upgrade in place (the DaemonSet agents, real cluster)', function () {
  this.timeout(300_000);
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  let custom: k8s.CustomObjectsApi;
  let kc: k8s.KubeConfig;
  let ns = '';
  const name = `mesh-${randomBytes(3).toString('hex')}`;
  const readSet = async () => (await custom.getClusterCustomObject({ ...SCS, name })) as SidecarSet;
  const listPods = async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=web' })).items.filter((p) => !p.metadata?.deletionTimestamp);

  before(async function () {
    ({ kc, core } = await kubeTest(this));
    apps = kc.makeApiClient(k8s.AppsV1Api);
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await agentOnEveryNode(kc);
    await applyCrds(kc, ['sidecarset.yaml']);
    await applyDeployFiles(kc, ['sidecarset-injection.yaml']);
    ns = await createNamespace(kc, 'scsup');
  });

  after(async () => {
    await custom?.deleteClusterCustomObject({ ...SCS, name }).catch(() => undefined);
    if (ns) await deleteNamespace(kc, ns);
  });

  it('upgrades the sidecar and the native sidecar of 2 pods in place: same pods, app containers untouched, one at a time, status updated', async () => {
    const spec: SidecarSetSpec = {
      selector: { matchLabels: { app: 'web' } },
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      containers: [{ name: 'proxy', image: V1, args: ['sh', '-c', TRAP_TERM_APP] }],
      // A native sidecar: a restartable init container, upgraded in place as the container is.
      initContainers: [{ name: 'agent', image: V1, args: ['sh', '-c', TRAP_TERM_APP], restartPolicy: 'Always' }],
      updateStrategy: { maxUnavailable: 1 },
    };
    await custom.createClusterCustomObject({ ...SCS, body: { apiVersion: `${SCS_GROUP}/${SCS_VERSION}`, kind: 'SidecarSet', metadata: { name }, spec } });
    const annotation = injectedAnnotation(name);
    await until('the policy to see the SidecarSet', 30_000, async () => {
      const p = await core.createNamespacedPod({ namespace: ns, dryRun: 'All', body: { metadata: { name: 'probe', labels: { app: 'web' } }, spec: { containers: [{ name: 'app', image: V1 }] } } });
      return p.metadata?.annotations?.[annotation] ? true : undefined;
    });
    const template = { metadata: { labels: { app: 'web' } }, spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'app', image: V1, args: ['sh', '-c', TRAP_TERM_APP] }] } };
    await apps.createNamespacedDeployment({ namespace: ns, body: { metadata: { name: 'web' }, spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template } } });
    const before = await until('2 injected pods Ready', 120_000, async () => {
      const pods = await listPods();
      return pods.length === 2 && pods.every((p) => isReady(p) && p.metadata?.annotations?.[annotation] === '1' && status(p, 'proxy')?.ready) ? pods : undefined;
    });
    await until('the status to count them', 60_000, async () => {
      const s = (await readSet()).status;
      return s?.injectedPods === 2 && s.updatedPods === 2 && s.readyPods === 2 ? s : undefined;
    });

    await custom.patchClusterCustomObject(
      { ...SCS, name, body: { spec: { containers: [{ ...spec.containers![0], image: V2 }], initContainers: [{ ...spec.initContainers![0], image: V2 }] } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    let mostAtOnce = 0;
    let last = '';
    const done = await until(
      'both sidecars on the new image and the status Updated',
      180_000,
      async () => {
        const crs = ((await custom.listClusterCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, labelSelector: `${SIDECARSET_LABEL}` })) as { items: ContainerRestart[] }).items.filter(
          (c) => c.metadata.namespace === ns,
        );
        mostAtOnce = Math.max(mostAtOnce, crs.filter((c) => c.status?.phase !== 'Succeeded' && c.status?.phase !== 'Failed').length);
        const set = await readSet();
        const pods = await listPods();
        last = JSON.stringify({ status: set.status, crs: crs.map((c) => `${c.spec.podName}:${c.status?.phase}`) });
        const upgraded = pods.length === 2 && pods.every((p) => isReady(p) && ['proxy', 'agent'].every((c) => imageMatches(status(p, c)?.image ?? '', V2)));
        const cond = set.status?.conditions?.find((c) => c.type === 'Updated');
        return upgraded && set.status?.observedGeneration === set.metadata.generation && set.status?.updatedPods === 2 && cond?.status === 'True' ? { pods, set, crs } : undefined;
      },
      { seen: () => last },
    );

    const byUid = new Map(done.pods.map((p) => [p.metadata?.uid, p]));
    for (const old of before) {
      const now = byUid.get(old.metadata?.uid);
      assert.ok(now, `pod ${old.metadata?.name} (uid ${old.metadata?.uid}) is still there`);
      assert.equal(status(now, 'app')?.containerID, status(old, 'app')?.containerID, 'the app container was not touched');
      assert.equal(status(now, 'app')?.restartCount, status(old, 'app')?.restartCount);
      assert.notEqual(status(now, 'proxy')?.containerID, status(old, 'proxy')?.containerID, 'the sidecar was recreated');
      assert.equal(now.spec?.containers.find((c) => c.name === 'proxy')?.image, V2);
      assert.notEqual(status(now, 'agent')?.containerID, status(old, 'agent')?.containerID, 'the native sidecar was recreated');
      assert.equal(now.spec?.initContainers?.find((c) => c.name === 'agent')?.image, V2, 'the native sidecar on the new image');
      assert.equal(status(now, 'agent')?.restartCount, (status(old, 'agent')?.restartCount ?? 0) + 1, 'the native sidecar restarted once, in place');
    }
    assert.equal(done.crs.length, 2, 'one ContainerRestart per pod');
    assert.deepEqual(done.crs.map((c) => c.spec.containers.map((x) => x.name).sort()), [['agent', 'proxy'], ['agent', 'proxy']], 'the sidecars alone');
    assert.ok(mostAtOnce <= 1, `at most maxUnavailable (1) upgrades at once, saw ${mostAtOnce}`);
    const s = done.set.status!;
    assert.deepEqual({ m: s.matchedPods, i: s.injectedPods, u: s.updatedPods, r: s.readyPods }, { m: 2, i: 2, u: 2, r: 2 });
    // The Deployment knows nothing of it: its template has no sidecar, and it made no new ReplicaSet.
    const d = await apps.readNamespacedDeployment({ name: 'web', namespace: ns });
    assert.deepEqual(d.spec?.template.spec?.containers.map((c) => c.name), ['app']);
    assert.equal((await apps.listNamespacedReplicaSet({ namespace: ns })).items.length, 1);
  });

  it('a sidecar image that cannot start stops at the first pod, rolled back in place, and the status names it', async () => {
    const before = await listPods();
    const crsOf = async () =>
      ((await custom.listClusterCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, labelSelector: SIDECARSET_LABEL })) as { items: ContainerRestart[] }).items.filter((c) => c.metadata.namespace === ns);
    const crsBefore = (await crsOf()).length;
    const set = await readSet();
    await custom.patchClusterCustomObject({ ...SCS, name, body: { spec: { containers: [{ ...set.spec.containers![0], image: env.sandbox.images.crash }] } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    let last = '';
    const failed = await until(
      'the status to name the failed pod',
      180_000,
      async () => {
        const cur = await readSet();
        last = JSON.stringify(cur.status);
        const cond = cur.status?.conditions?.find((c) => c.type === 'Updated');
        return cur.status?.observedGeneration === cur.metadata.generation && cond?.reason === 'UpgradeFailed' ? cur : undefined;
      },
      { seen: () => last },
    );
    assert.equal(failed.status?.failures?.length, 1, JSON.stringify(failed.status));
    const f = failed.status!.failures![0]!;
    assert.equal(f.container, 'proxy');
    assert.equal(f.exitCode, 3, JSON.stringify(f));
    assert.match(failed.status?.message ?? '', new RegExp(`pod ${f.pod} container proxy failed`));
    assert.equal((await crsOf()).length - crsBefore, 1, 'no pod after the first was started');
    for (const p of await listPods()) {
      const old = before.find((b) => b.metadata?.uid === p.metadata?.uid);
      assert.ok(old, `pod ${p.metadata?.name} is the same pod`);
      assert.equal(p.spec?.containers.find((c) => c.name === 'proxy')?.image, V2, `${p.metadata?.name}: the sidecar back on (or still on) the last good image`);
      assert.equal(status(p, 'app')?.containerID, status(old, 'app')?.containerID, 'the app container was not touched');
    }
  });
});
