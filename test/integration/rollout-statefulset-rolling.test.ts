// A StatefulSet left on its default RollingUpdate strategy, rolled out in place by the DaemonSet's agents: the
// hold of deploy/workload-hold-policy.yaml sets its partition to its replicas as the template changes, the agents
// update the pods in place and relabel them to the update revision, then put the user's partition back. The
// StatefulSet's own status must then say it is done: currentRevision == updateRevision, and
// `kubectl rollout status` exits 0. Then `kubectl rollout undo`, in place the same way; and a DaemonSet on
// RollingUpdate, set image then undo (held as OnDelete, its rolling update put back). And a canary widened by
// lowering the partition mid-rollout, held again at admission: no pod recreated.
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { DAEMONSET_HOLD_ANNOTATION, PARTITION_HOLD_ANNOTATION } from '../../src/controllers/rollout/workloads/hold.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { deleteNamespace } from '../support/kube-cluster.js';
import { until } from '../support/kube-users.js';
import { gatedTemplate, rolloutAtRest, rolloutCluster, type RolloutCluster } from '../support/rollout-cluster.js';

const env = kubeEnv();
const NAME = 'db';
const REPLICAS = 3;

describe("A StatefulSet on RollingUpdate rolled out in place by the DaemonSet's agents (real cluster)", function () {
  this.timeout(600_000);
  const kc = new KubeConfig();
  let c: RolloutCluster;
  const pods = () => c.pods(NAME);

  before(async function () {
    c = await rolloutCluster(this, kc, 'iprs');
    await c.apps.createNamespacedStatefulSet({
      namespace: c.ns,
      body: { metadata: { name: NAME }, spec: { replicas: REPLICAS, serviceName: NAME, podManagementPolicy: 'Parallel', selector: { matchLabels: { app: NAME } }, template: gatedTemplate(NAME) } },
    });
    await c.createRollout(NAME, 'StatefulSet');
    await c.kubectl('rollout', 'status', `statefulset/${NAME}`, '--timeout=180s');
  });

  after(async () => {
    if (c?.ns) await deleteNamespace(kc, c.ns);
  });

  /** Runs the kubectl verb on the StatefulSet; checks it was carried out in place, to `image`, and released. */
  async function statefulSetInPlace(verb: string[], image: string): Promise<void> {
    const before = (await pods()).map((p) => p.metadata?.uid).sort();
    assert.equal(before.length, REPLICAS);
    await c.kubectl(...verb);
    // (While held, kubectl rollout status would answer at once: with the partition at replicas, 0 pods are due.)
    const sts = await until('the StatefulSet released, its currentRevision at the update revision', 300_000, async () => {
      const s = await c.apps.readNamespacedStatefulSet({ namespace: c.ns, name: NAME });
      const held = s.metadata?.annotations?.[PARTITION_HOLD_ANNOTATION] !== undefined || s.spec?.updateStrategy?.rollingUpdate?.partition === REPLICAS;
      return s.status?.currentRevision === s.status?.updateRevision && s.status?.observedGeneration === s.metadata?.generation && !held ? s : undefined;
    });
    assert.equal(sts.spec?.updateStrategy?.rollingUpdate?.partition, 0, "the user's partition back");
    assert.equal(sts.status?.updatedReplicas, REPLICAS);
    const after = await pods();
    assert.deepEqual(after.map((p) => p.metadata?.uid).sort(), before, 'the same pods');
    for (const p of after) {
      assert.equal(p.spec?.containers[0].image, image);
      assert.equal(p.metadata?.labels?.['controller-revision-hash'], sts.status?.updateRevision, `${p.metadata?.name} at the update revision`);
    }
    // Exit 0, or the call throws.
    assert.match(await c.kubectl('rollout', 'status', `statefulset/${NAME}`, '--timeout=60s'), /3 new pods have been updated/);
    await rolloutAtRest(c, NAME);
  }

  it('kubectl set image: the same pods, currentRevision == updateRevision, the partition back at 0, kubectl rollout status exits 0', async () => {
    await statefulSetInPlace(['set', 'image', `statefulset/${NAME}`, `app=${env.sandbox.images.appV2}`], env.sandbox.images.appV2);
  });

  it('kubectl rollout undo: back to the previous image in place, the same checks', async () => {
    await statefulSetInPlace(['rollout', 'undo', `statefulset/${NAME}`], env.sandbox.images.appV1);
    const s = await c.apps.readNamespacedStatefulSet({ namespace: c.ns, name: NAME });
    assert.equal(s.spec?.template.spec?.containers[0].image, env.sandbox.images.appV1, "the StatefulSet's template is the previous one");
  });

  it("a canary widened: set image at partition 2 moves ordinal 2 only, then partition 0 moves 0 and 1 in place (none recreated), and the user's partition is kept", async () => {
    const uids = new Map((await pods()).map((p) => [p.metadata?.name ?? '', p.metadata?.uid]));
    assert.equal(uids.size, REPLICAS);
    const partition = (n: number) => ['patch', `statefulset/${NAME}`, '--type', 'merge', '-p', JSON.stringify({ spec: { updateStrategy: { rollingUpdate: { partition: n } } } })];
    const released = (want: number) => async () => {
      const s = await c.apps.readNamespacedStatefulSet({ namespace: c.ns, name: NAME });
      const held = s.metadata?.annotations?.[PARTITION_HOLD_ANNOTATION] !== undefined;
      const updated = (await pods()).filter((p) => p.metadata?.labels?.['controller-revision-hash'] === s.status?.updateRevision);
      return !held && s.spec?.updateStrategy?.rollingUpdate?.partition === want && s.status?.observedGeneration === s.metadata?.generation && updated.length === REPLICAS - want ? s : undefined;
    };
    await c.kubectl(...partition(2));
    await c.kubectl('set', 'image', `statefulset/${NAME}`, `app=${env.sandbox.images.appV2}`);
    const canary = await until('ordinal 2 updated in place and the partition back at 2', 300_000, released(2));
    assert.notEqual(canary.status?.currentRevision, canary.status?.updateRevision, 'ordinals 0 and 1 still at the current revision');
    for (const p of await pods()) {
      assert.equal(p.metadata?.uid, uids.get(p.metadata?.name ?? ''), `${p.metadata?.name} not recreated`);
      assert.equal(p.spec?.containers[0].image, p.metadata?.name === `${NAME}-2` ? env.sandbox.images.appV2 : env.sandbox.images.appV1, p.metadata?.name);
    }
    // Widened: the hold takes the lowered partition in before the stock controller could recreate ordinals 0 and 1.
    await c.kubectl(...partition(0));
    const s = await c.apps.readNamespacedStatefulSet({ namespace: c.ns, name: NAME });
    assert.equal(s.metadata?.annotations?.[PARTITION_HOLD_ANNOTATION], '0', "the user's new partition recorded by the hold");
    assert.equal(s.spec?.updateStrategy?.rollingUpdate?.partition, REPLICAS, 'held at replicas');
    const done = await until('every ordinal updated in place and the partition back at 0', 300_000, released(0));
    assert.equal(done.status?.currentRevision, done.status?.updateRevision);
    for (const p of await pods()) {
      assert.equal(p.metadata?.uid, uids.get(p.metadata?.name ?? ''), `${p.metadata?.name} not recreated`);
      assert.equal(p.spec?.containers[0].image, env.sandbox.images.appV2, p.metadata?.name);
    }
    await rolloutAtRest(c, NAME);
  });

  const DS = 'agentlike';
  const dsPods = () => c.pods(DS);

  /** Runs the kubectl verb on the DaemonSet; checks it was carried out in place, to `image`, and released. */
  async function daemonSetInPlace(verb: string[], image: string): Promise<void> {
    const before = (await dsPods()).map((p) => p.metadata?.uid).sort();
    await c.kubectl(...verb);
    const ds = await until('the DaemonSet released, every pod updated', 300_000, async () => {
      const d = await c.apps.readNamespacedDaemonSet({ namespace: c.ns, name: DS });
      const st = d.status;
      const done = d.spec?.updateStrategy?.type === 'RollingUpdate' && !d.metadata?.annotations?.[DAEMONSET_HOLD_ANNOTATION] && st?.observedGeneration === d.metadata?.generation;
      return done && st?.updatedNumberScheduled === st?.desiredNumberScheduled ? d : undefined;
    });
    assert.equal(ds.spec?.updateStrategy?.rollingUpdate?.maxUnavailable, 1, 'the rolling update as it was');
    assert.equal(ds.status?.updatedNumberScheduled, before.length, 'every pod updated, by its controller\'s count');
    const after = await dsPods();
    assert.deepEqual(after.map((p) => p.metadata?.uid).sort(), before, 'the same pods');
    for (const p of after) assert.equal(p.spec?.containers[0].image, image);
    // Exit 0, or the call throws.
    assert.match(await c.kubectl('rollout', 'status', `daemonset/${DS}`, '--timeout=60s'), /successfully rolled out/);
    // And the rollout, seeing it at rest on RollingUpdate again, says Succeeded (not refused).
    await rolloutAtRest(c, DS);
  }

  it('a DaemonSet on RollingUpdate, kubectl set image: the same pods, every one updated, its rolling update back, kubectl rollout status exits 0', async () => {
    await c.apps.createNamespacedDaemonSet({
      namespace: c.ns,
      body: { metadata: { name: DS }, spec: { selector: { matchLabels: { app: DS } }, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } }, template: gatedTemplate(DS) } },
    });
    await c.createRollout(DS, 'DaemonSet');
    await c.kubectl('rollout', 'status', `daemonset/${DS}`, '--timeout=180s');
    await daemonSetInPlace(['set', 'image', `daemonset/${DS}`, `app=${env.sandbox.images.appV2}`], env.sandbox.images.appV2);
  });

  it('the DaemonSet, kubectl rollout undo: back to the previous image in place, the same checks', async () => {
    await daemonSetInPlace(['rollout', 'undo', `daemonset/${DS}`], env.sandbox.images.appV1);
    const d = await c.apps.readNamespacedDaemonSet({ namespace: c.ns, name: DS });
    assert.equal(d.spec?.template.spec?.containers[0].image, env.sandbox.images.appV1, "the DaemonSet's template is the previous one");
  });
});
