// A StatefulSet left on its default RollingUpdate strategy, rolled out in place by the DaemonSet's agents: the
// hold of deploy/workload-hold-policy.yaml sets its partition to its replicas as the template changes, the agents
// update the pods in place and relabel them to the update revision, then put the user's partition back. The
// StatefulSet's own status must then say it is done: currentRevision == updateRevision, and
// `kubectl rollout status` exits 0.
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { DAEMONSET_HOLD_ANNOTATION, PARTITION_HOLD_ANNOTATION } from '../../src/controllers/rollout/workloads/hold.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { deleteNamespace } from '../support/kube-cluster.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';
import { until } from '../support/kube-users.js';
import { rolloutAtRest, rolloutCluster, type RolloutCluster } from '../support/rollout-cluster.js';

const env = kubeEnv();
const NAME = 'db';
const REPLICAS = 3;
/** A pod template of app, gated by the agent's condition, on the app v1 image. */
const appTemplate = (app: string) => ({
  metadata: { labels: { app } },
  spec: { terminationGracePeriodSeconds: 5, readinessGates: [{ conditionType: READY_CONDITION }], containers: [{ name: 'app', image: env.sandbox.images.appV1, args: ['sh', '-c', TRAP_TERM_APP] }] },
});

describe("A StatefulSet on RollingUpdate rolled out in place by the DaemonSet's agents (real cluster)", function () {
  this.timeout(600_000);
  const kc = new KubeConfig();
  let c: RolloutCluster;
  const pods = () => c.pods(NAME);

  before(async function () {
    c = await rolloutCluster(this, kc, 'iprs');
    await c.apps.createNamespacedStatefulSet({
      namespace: c.ns,
      body: { metadata: { name: NAME }, spec: { replicas: REPLICAS, serviceName: NAME, podManagementPolicy: 'Parallel', selector: { matchLabels: { app: NAME } }, template: appTemplate(NAME) } },
    });
    await c.createRollout(NAME, 'StatefulSet');
    await c.kubectl('rollout', 'status', `statefulset/${NAME}`, '--timeout=180s');
  });

  after(async () => {
    if (c?.ns) await deleteNamespace(kc, c.ns);
  });

  it('kubectl set image: the same pods, currentRevision == updateRevision, the partition back at 0, kubectl rollout status exits 0', async () => {
    const before = (await pods()).map((p) => p.metadata?.uid).sort();
    assert.equal(before.length, REPLICAS);
    await c.kubectl('set', 'image', `statefulset/${NAME}`, `app=${env.sandbox.images.appV2}`);
    // (While held, kubectl rollout status would answer at once: with the partition at replicas, 0 pods are due.)
    const sts = await until('the StatefulSet released, its currentRevision at the update revision', 300_000, async () => {
      const s = await c.apps.readNamespacedStatefulSet({ namespace: c.ns, name: NAME });
      return s.status?.currentRevision === s.status?.updateRevision && s.status?.observedGeneration === s.metadata?.generation && !s.metadata?.annotations?.[PARTITION_HOLD_ANNOTATION] ? s : undefined;
    });
    assert.equal(sts.spec?.updateStrategy?.rollingUpdate?.partition, 0, "the user's partition back");
    assert.equal(sts.status?.updatedReplicas, REPLICAS);
    const after = await pods();
    assert.deepEqual(after.map((p) => p.metadata?.uid).sort(), before, 'the same pods');
    for (const p of after) assert.equal(p.spec?.containers[0].image, env.sandbox.images.appV2);
    // Exit 0, or the call throws.
    assert.match(await c.kubectl('rollout', 'status', `statefulset/${NAME}`, '--timeout=60s'), /3 new pods have been updated/);
    await rolloutAtRest(c, NAME);
  });

  it('a DaemonSet on RollingUpdate, kubectl set image: the same pods, every one updated, its rolling update back, kubectl rollout status exits 0', async () => {
    const DS = 'agentlike';
    await c.apps.createNamespacedDaemonSet({
      namespace: c.ns,
      body: { metadata: { name: DS }, spec: { selector: { matchLabels: { app: DS } }, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } }, template: appTemplate(DS) } },
    });
    await c.createRollout(DS, 'DaemonSet');
    await c.kubectl('rollout', 'status', `daemonset/${DS}`, '--timeout=180s');
    const dsPods = () => c.pods(DS);
    const before = (await dsPods()).map((p) => p.metadata?.uid).sort();
    await c.kubectl('set', 'image', `daemonset/${DS}`, `app=${env.sandbox.images.appV2}`);
    const ds = await until('the DaemonSet released, every pod updated', 300_000, async () => {
      const d = await c.apps.readNamespacedDaemonSet({ namespace: c.ns, name: DS });
      const st = d.status;
      const done = d.spec?.updateStrategy?.type === 'RollingUpdate' && !d.metadata?.annotations?.[DAEMONSET_HOLD_ANNOTATION] && st?.observedGeneration === d.metadata?.generation;
      return done && st?.updatedNumberScheduled === st?.desiredNumberScheduled ? d : undefined;
    });
    assert.equal(ds.spec?.updateStrategy?.rollingUpdate?.maxUnavailable, 1, 'the rolling update as it was');
    const after = await dsPods();
    assert.deepEqual(after.map((p) => p.metadata?.uid).sort(), before, 'the same pods');
    for (const p of after) assert.equal(p.spec?.containers[0].image, env.sandbox.images.appV2);
    // Exit 0, or the call throws.
    assert.match(await c.kubectl('rollout', 'status', `daemonset/${DS}`, '--timeout=60s'), /successfully rolled out/);
    // And the rollout, seeing it at rest on RollingUpdate again, says Succeeded (not refused).
    await rolloutAtRest(c, DS);
  });
});
