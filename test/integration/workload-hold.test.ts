// deploy/workload-hold-policy.yaml on the project's cluster, as scripts/kube-deploy-agent installs it: a template
// change of a workload that an InPlaceRollout names is held at admission (Deployment paused, StatefulSet
// partition at its replicas, DaemonSet OnDelete), with the user's own value recorded in an annotation; a workload
// that no rollout names is left to its stock controller. The rollouts here are paused, so the agents hold off,
// and every outcome is read back from the API server once the workload's controller has observed the change.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, type InPlaceRolloutSpec } from '../../src/controllers/rollout/types.js';
import { DEPLOYMENT_HOLD_ANNOTATION, DAEMONSET_HOLD_ANNOTATION, PARTITION_HOLD_ANNOTATION } from '../../src/controllers/rollout/workloads/hold.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { until } from '../support/kube-users.js';
import { requireRuntime } from '../support/require-runtime.js';

const run = promisify(execFile);
const env = kubeEnv();
const V1 = env.sandbox.images.appV1;
const V2 = env.sandbox.images.appV2;

const podTemplate = (app: string) => ({
  metadata: { labels: { app } },
  spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: V1, args: ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 1 & wait $!; done'] }] },
});

describe('workload-hold-policy.yaml: a template change of a workload a rollout names is held at admission (real cluster)', function () {
  this.timeout(300_000);
  const kc = new KubeConfig();
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let ns = '';
  const kubectl = async (...args: string[]) => (await run(path.join(env.binDir, 'kubectl'), ['--kubeconfig', env.kubeconfig, '-n', ns, ...args])).stdout;
  const createRollout = (name: string, spec: Pick<InPlaceRolloutSpec, 'targetRef'>) =>
    custom.createNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name }, spec: { ...spec, paused: true, prewarm: false } } });
  const pods = async (app: string) => (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${app}` })).items.filter((p) => !p.metadata?.deletionTimestamp);
  const uids = (ps: V1Pod[]) => ps.map((p) => p.metadata?.uid).sort();
  const replicaSets = async (app: string) => (await apps.listNamespacedReplicaSet({ namespace: ns, labelSelector: `app=${app}` })).items;

  before(async function () {
    await requireRuntime(this, 'the test cluster with deploy/ installed (scripts/kube-deploy-agent)', async () => {
      kc.loadFromFile(env.kubeconfig);
      apps = kc.makeApiClient(AppsV1Api);
      core = kc.makeApiClient(CoreV1Api);
      custom = kc.makeApiClient(CustomObjectsApi);
      await custom.listClusterCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL });
    });
    ns = await createNamespace(kc, 'hold');
    for (const name of ['held', 'free']) {
      await apps.createNamespacedDeployment({ namespace: ns, body: { metadata: { name }, spec: { replicas: 2, selector: { matchLabels: { app: name } }, template: podTemplate(name) } } });
    }
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: { metadata: { name: 'sts' }, spec: { replicas: 2, serviceName: 'sts', podManagementPolicy: 'Parallel', updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 1 } }, selector: { matchLabels: { app: 'sts' } }, template: podTemplate('sts') } },
    });
    await apps.createNamespacedDaemonSet({ namespace: ns, body: { metadata: { name: 'ds' }, spec: { selector: { matchLabels: { app: 'ds' } }, template: podTemplate('ds') } } });
    await createRollout('held', { targetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'held' } });
    await createRollout('sts', { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'sts' } });
    await createRollout('ds', { targetRef: { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds' } });
    await kubectl('rollout', 'status', 'deployment/held', '--timeout=120s');
    await kubectl('rollout', 'status', 'deployment/free', '--timeout=120s');
    await kubectl('rollout', 'status', 'statefulset/sts', '--timeout=120s');
    await kubectl('rollout', 'status', 'daemonset/ds', '--timeout=120s');
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
  });

  it('Deployment: kubectl set image pauses it (annotated as the hold) and creates no ReplicaSet; one no rollout names rolls as ever', async () => {
    await kubectl('set', 'image', 'deployment/held', `app=${V2}`);
    await kubectl('set', 'image', 'deployment/free', `app=${V2}`);
    const held = await apps.readNamespacedDeployment({ namespace: ns, name: 'held' });
    assert.equal(held.spec?.paused, true);
    assert.equal(held.metadata?.annotations?.[DEPLOYMENT_HOLD_ANNOTATION], 'paused');
    // The controller's sign that it has seen the change: its observedGeneration.
    await until('the Deployment controller to observe held', 60_000, async () => {
      const d = await apps.readNamespacedDeployment({ namespace: ns, name: 'held' });
      return d.status?.observedGeneration === d.metadata?.generation ? d : undefined;
    });
    assert.equal((await replicaSets('held')).length, 1, 'no new ReplicaSet');
    assert.ok((await pods('held')).every((p) => p.spec?.containers[0].image === V1), 'no pod of the new template');
    // Without a rollout the stock controller makes its new ReplicaSet, and the Deployment is not paused.
    await until('a second ReplicaSet of free', 60_000, async () => ((await replicaSets('free')).length === 2 ? true : undefined));
    const free = await apps.readNamespacedDeployment({ namespace: ns, name: 'free' });
    assert.notEqual(free.spec?.paused, true);
    assert.equal(free.metadata?.annotations?.[DEPLOYMENT_HOLD_ANNOTATION], undefined);
  });

  it("StatefulSet on RollingUpdate: the partition goes to replicas, the user's partition is recorded, no pod is recreated", async () => {
    const before = uids(await pods('sts'));
    await kubectl('set', 'image', 'statefulset/sts', `app=${V2}`);
    const sts = await until('the StatefulSet controller to observe the new revision', 60_000, async () => {
      const s = await apps.readNamespacedStatefulSet({ namespace: ns, name: 'sts' });
      return s.status?.observedGeneration === s.metadata?.generation && s.status?.updateRevision !== s.status?.currentRevision ? s : undefined;
    });
    assert.equal(sts.spec?.updateStrategy?.rollingUpdate?.partition, 2);
    assert.equal(sts.metadata?.annotations?.[PARTITION_HOLD_ANNOTATION], '1');
    assert.equal(sts.status?.updatedReplicas ?? 0, 0);
    assert.deepEqual(uids(await pods('sts')), before, 'the same pods');
  });

  it('DaemonSet on RollingUpdate: OnDelete while held, its rolling update recorded, no pod is recreated', async () => {
    const before = uids(await pods('ds'));
    await kubectl('set', 'image', 'daemonset/ds', `app=${V2}`);
    const ds = await until('the DaemonSet controller to observe the change', 60_000, async () => {
      const d = await apps.readNamespacedDaemonSet({ namespace: ns, name: 'ds' });
      return d.status?.observedGeneration === d.metadata?.generation ? d : undefined;
    });
    assert.equal(ds.spec?.updateStrategy?.type, 'OnDelete');
    assert.equal(ds.metadata?.annotations?.[DAEMONSET_HOLD_ANNOTATION], 'maxUnavailable=1,maxSurge=0');
    assert.equal(ds.status?.updatedNumberScheduled ?? 0, 0);
    assert.deepEqual(uids(await pods('ds')), before, 'the same pods');
  });
});
