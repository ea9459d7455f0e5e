// A StatefulSet left on its default RollingUpdate strategy, rolled out in place by the DaemonSet's agents: the
// hold of deploy/workload-hold-policy.yaml sets its partition to its replicas as the template changes, the agents
// update the pods in place and relabel them to the update revision, then put the user's partition back. The
// StatefulSet's own status must then say it is done: currentRevision == updateRevision, and
// `kubectl rollout status` exits 0.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION } from '../../src/rollout/types.js';
import { DAEMONSET_HOLD_ANNOTATION, PARTITION_HOLD_ANNOTATION } from '../../src/rollout/workloads/hold.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { until } from '../support/kube-users.js';
import { agentOnEveryNode, AGENT_NS } from '../support/rollout-wait.js';
import type { InPlaceRollout } from '../../src/rollout/types.js';
import { requireRuntime } from '../support/require-runtime.js';

const run = promisify(execFile);
const env = kubeEnv();
const NAME = 'db';
const REPLICAS = 3;
const APP = `trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`;

describe("A StatefulSet on RollingUpdate rolled out in place by the DaemonSet's agents (real cluster)", function () {
  this.timeout(600_000);
  const kc = new KubeConfig();
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let ns = '';
  const kubectl = async (...args: string[]) => (await run(path.join(env.binDir, 'kubectl'), ['--kubeconfig', env.kubeconfig, '-n', ns, ...args])).stdout;
  const pods = async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${NAME}` })).items.filter((p) => !p.metadata?.deletionTimestamp);

  /** The rollout's round after the release (its message no longer saying "released"): Succeeded, not refused. */
  const atRest = async (name: string) => {
    let last = '';
    await until(`rollout ${name} Succeeded after the release`, 60_000, async () => {
      const r = (await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, name })) as InPlaceRollout;
      last = JSON.stringify(r.status);
      return r.status?.phase === 'Succeeded' && !/released/.test(r.status.message ?? '') ? r : undefined;
    }, () => last);
  };

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet ${AGENT_NS}/inplace-agent Ready on every node, with deploy/workload-hold-policy.yaml (scripts/kube-deploy-agent)`, async () => {
      kc.loadFromFile(env.kubeconfig);
      apps = kc.makeApiClient(AppsV1Api);
      core = kc.makeApiClient(CoreV1Api);
      await agentOnEveryNode(kc);
    });
    ns = await createNamespace(kc, 'iprs');
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: NAME },
        spec: {
          replicas: REPLICAS,
          serviceName: NAME,
          podManagementPolicy: 'Parallel',
          selector: { matchLabels: { app: NAME } },
          template: {
            metadata: { labels: { app: NAME } },
            spec: { terminationGracePeriodSeconds: 5, readinessGates: [{ conditionType: READY_CONDITION }], containers: [{ name: 'app', image: env.sandbox.images.appV1, args: ['sh', '-c', APP] }] },
          },
        },
      },
    });
    await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: IPR_GROUP,
      version: IPR_VERSION,
      plural: IPR_PLURAL,
      namespace: ns,
      body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name: NAME }, spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: NAME }, prewarm: false } },
    });
    await kubectl('rollout', 'status', `statefulset/${NAME}`, '--timeout=180s');
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
  });

  it('kubectl set image: the same pods, currentRevision == updateRevision, the partition back at 0, kubectl rollout status exits 0', async () => {
    const before = (await pods()).map((p) => p.metadata?.uid).sort();
    assert.equal(before.length, REPLICAS);
    await kubectl('set', 'image', `statefulset/${NAME}`, `app=${env.sandbox.images.appV2}`);
    // (While held, kubectl rollout status would answer at once: with the partition at replicas, 0 pods are due.)
    const sts = await until('the StatefulSet released, its currentRevision at the update revision', 300_000, async () => {
      const s = await apps.readNamespacedStatefulSet({ namespace: ns, name: NAME });
      return s.status?.currentRevision === s.status?.updateRevision && s.status?.observedGeneration === s.metadata?.generation && !s.metadata?.annotations?.[PARTITION_HOLD_ANNOTATION] ? s : undefined;
    });
    assert.equal(sts.spec?.updateStrategy?.rollingUpdate?.partition, 0, "the user's partition back");
    assert.equal(sts.status?.updatedReplicas, REPLICAS);
    const after = await pods();
    assert.deepEqual(after.map((p) => p.metadata?.uid).sort(), before, 'the same pods');
    for (const p of after) assert.equal(p.spec?.containers[0].image, env.sandbox.images.appV2);
    // Exit 0, or the call throws.
    assert.match(await kubectl('rollout', 'status', `statefulset/${NAME}`, '--timeout=60s'), /3 new pods have been updated/);
    await atRest(NAME);
  });

  it('a DaemonSet on RollingUpdate, kubectl set image: the same pods, every one updated, its rolling update back, kubectl rollout status exits 0', async () => {
    const DS = 'agentlike';
    await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: DS },
        spec: {
          selector: { matchLabels: { app: DS } },
          updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
          template: {
            metadata: { labels: { app: DS } },
            spec: { terminationGracePeriodSeconds: 5, readinessGates: [{ conditionType: READY_CONDITION }], containers: [{ name: 'app', image: env.sandbox.images.appV1, args: ['sh', '-c', APP] }] },
          },
        },
      },
    });
    await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: IPR_GROUP,
      version: IPR_VERSION,
      plural: IPR_PLURAL,
      namespace: ns,
      body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name: DS }, spec: { targetRef: { apiVersion: 'apps/v1', kind: 'DaemonSet', name: DS }, prewarm: false } },
    });
    await kubectl('rollout', 'status', `daemonset/${DS}`, '--timeout=180s');
    const dsPods = async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${DS}` })).items.filter((p) => !p.metadata?.deletionTimestamp);
    const before = (await dsPods()).map((p) => p.metadata?.uid).sort();
    await kubectl('set', 'image', `daemonset/${DS}`, `app=${env.sandbox.images.appV2}`);
    const ds = await until('the DaemonSet released, every pod updated', 300_000, async () => {
      const d = await apps.readNamespacedDaemonSet({ namespace: ns, name: DS });
      const st = d.status;
      const done = d.spec?.updateStrategy?.type === 'RollingUpdate' && !d.metadata?.annotations?.[DAEMONSET_HOLD_ANNOTATION] && st?.observedGeneration === d.metadata?.generation;
      return done && st?.updatedNumberScheduled === st?.desiredNumberScheduled ? d : undefined;
    });
    assert.equal(ds.spec?.updateStrategy?.rollingUpdate?.maxUnavailable, 1, 'the rolling update as it was');
    const after = await dsPods();
    assert.deepEqual(after.map((p) => p.metadata?.uid).sort(), before, 'the same pods');
    for (const p of after) assert.equal(p.spec?.containers[0].image, env.sandbox.images.appV2);
    // Exit 0, or the call throws.
    assert.match(await kubectl('rollout', 'status', `daemonset/${DS}`, '--timeout=60s'), /successfully rolled out/);
    // And the rollout, seeing it at rest on RollingUpdate again, says Succeeded (not refused).
    await atRest(DS);
  });
});
