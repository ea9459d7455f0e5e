// A hold survives the changes a user makes with plain kubectl while an in-place rollout of a Deployment is under
// way (held, some pods updated, some not): maxUnavailable changed, a scale up then down, a second set image, a
// `kubectl rollout pause` then `resume`, the strategy switched to Recreate. Each change lands after the agent's own
// sign that the rollout is mid-way (one more ContainerRestart Succeeded, the Deployment still held); then every pod
// that was there keeps its UID, every pod runs the last template, the Deployment is released and `kubectl rollout
// status` exits 0. The table in docs/rollouts.md ("Changes mid-rollout") says what the stock controller would do.
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { DEPLOYMENT_HOLD_ANNOTATION, PARTITION_HOLD_ANNOTATION } from '../../src/controllers/rollout/workloads/hold.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { deleteNamespace } from '../support/kube-cluster.js';
import { until } from '../support/kube-users.js';
import { retag } from '../support/registry-retag.js';
import { gatedTemplate, rolloutAtRest, rolloutCluster, type RolloutCluster } from '../support/rollout-cluster.js';

const env = kubeEnv();
const NAME = 'web';
const REPLICAS = 3;

describe('A Deployment rolled out in place keeps its pods through the changes its user makes mid-rollout (real cluster)', function () {
  this.timeout(300_000);
  const kc = new KubeConfig();
  let c: RolloutCluster;
  const pods = () => c.pods(NAME);
  const deployment = () => c.apps.readNamespacedDeployment({ namespace: c.ns, name: NAME });
  const succeeded = async () => (await c.restarts()).filter((r) => r.status?.phase === 'Succeeded').length;

  before(async function () {
    c = await rolloutCluster(this, kc, 'iprm');
    await c.createDeployment(NAME, REPLICAS, gatedTemplate(NAME));
    await c.createRollout(NAME, 'Deployment');
    await c.kubectl('rollout', 'status', `deployment/${NAME}`, '--timeout=180s');
  });

  after(async () => {
    if (c?.ns) await deleteNamespace(kc, c.ns);
  });

  /**
   * Sets the image, waits for one more pod updated in place with the Deployment still held, runs `change`, then
   * checks: released, every pod on `final` (the image unless the change set another), each pod that was there
   * before kept its UID, one ReplicaSet holds pods, `kubectl rollout status` exits 0, the rollout at rest.
   */
  async function midRollout(image: string, change: () => Promise<void>, replicas = REPLICAS, final = image): Promise<void> {
    const uids = new Map((await pods()).map((p) => [p.metadata?.name ?? '', p.metadata?.uid]));
    const done = await succeeded();
    await c.kubectl('set', 'image', `deployment/${NAME}`, `app=${image}`);
    await until('one pod updated in place, the Deployment still held', 120_000, async () => (await succeeded()) > done || undefined);
    const held = await deployment();
    assert.equal(held.metadata?.annotations?.[DEPLOYMENT_HOLD_ANNOTATION], 'paused', 'the change lands mid-rollout, while held');
    assert.ok((await pods()).some((p) => p.spec?.containers[0].image !== image), 'some pod still behind when the change lands');
    await change();
    let last = '';
    const d = await until('the Deployment released, every pod on the last template', 180_000, async () => {
      const x = await deployment();
      const ps = await pods();
      last = JSON.stringify({ paused: x.spec?.paused, ann: x.metadata?.annotations, status: x.status, images: ps.map((p) => p.spec?.containers[0].image) });
      const released = !x.spec?.paused && x.metadata?.annotations?.[DEPLOYMENT_HOLD_ANNOTATION] === undefined && x.status?.observedGeneration === x.metadata?.generation;
      return released && x.status?.updatedReplicas === replicas && ps.length === replicas && ps.every((p) => p.spec?.containers[0].image === final) ? x : undefined;
    }, () => last);
    assert.equal(d.spec?.template.spec?.containers[0].image, final);
    for (const p of await pods()) {
      const was = uids.get(p.metadata?.name ?? '');
      if (was !== undefined) assert.equal(p.metadata?.uid, was, `${p.metadata?.name} not recreated`);
    }
    assert.equal((await c.replicaSets(NAME)).filter((r) => (r.status?.replicas ?? 0) > 0).length, 1, 'one ReplicaSet holds pods');
    // Exit 0, or the call throws.
    assert.match(await c.kubectl('rollout', 'status', `deployment/${NAME}`, '--timeout=60s'), /successfully rolled out/);
    await rolloutAtRest(c, NAME);
  }

  it('maxUnavailable changed mid-rollout (1 -> 2): no pod recreated, released, kubectl rollout status exits 0', async () => {
    await midRollout(env.sandbox.images.appV2, () =>
      c.kubectl('patch', `deployment/${NAME}`, '--type', 'merge', '-p', JSON.stringify({ spec: { strategy: { rollingUpdate: { maxUnavailable: 2 } } } })).then(() => undefined));
    assert.equal((await deployment()).spec?.strategy?.rollingUpdate?.maxUnavailable, 2, "the user's maxUnavailable kept");
    // Back to 1 at rest (no template change, nothing held), so that the next tests' sign (one pod done) still
    // finds a pod that has not begun.
    await c.kubectl('patch', `deployment/${NAME}`, '--type', 'merge', '-p', JSON.stringify({ spec: { strategy: { rollingUpdate: { maxUnavailable: 1 } } } }));
  });

  it('kubectl scale up (3 -> 5) then down (5 -> 3) mid-rollout: no pod that stays is recreated, all 3 on the new image', async () => {
    await midRollout(env.sandbox.images.appV1, async () => {
      await c.kubectl('scale', `deployment/${NAME}`, '--replicas=5');
      await until('5 pods', 60_000, async () => (await pods()).length === 5 || undefined);
      await c.kubectl('scale', `deployment/${NAME}`, `--replicas=${REPLICAS}`);
    });
  });

  it('a second kubectl set image before the first is done: no pod recreated, every pod on the second image', async () => {
    const third = await retag(env.sandbox.registry, env.sandbox.images.appV1, `iprm-third-${Date.now().toString(36)}`);
    await midRollout(env.sandbox.images.appV2, () => c.kubectl('set', 'image', `deployment/${NAME}`, `app=${third}`).then(() => undefined), REPLICAS, third);
  });

  it('kubectl rollout pause, then resume, mid-rollout: no pod recreated, released, kubectl rollout status exits 0', async () => {
    await midRollout(env.sandbox.images.appV1, async () => {
      // Held, the Deployment is paused already: kubectl's pause finds nothing to change.
      await c.kubectl('rollout', 'pause', `deployment/${NAME}`).catch((e: { stderr?: string }) => assert.match(e.stderr ?? '', /already paused/));
      await c.kubectl('rollout', 'resume', `deployment/${NAME}`);
    });
  });

  it('the strategy switched to Recreate mid-rollout: no pod recreated, released on Recreate, kubectl rollout status exits 0', async () => {
    await midRollout(env.sandbox.images.appV2, () =>
      c.kubectl('patch', `deployment/${NAME}`, '--type', 'merge', '-p', JSON.stringify({ spec: { strategy: { type: 'Recreate', rollingUpdate: null } } })).then(() => undefined));
    assert.equal((await deployment()).spec?.strategy?.type, 'Recreate', "the user's strategy kept");
  });
});

describe('A StatefulSet rolled out in place, switched from RollingUpdate to OnDelete mid-rollout (real cluster)', function () {
  this.timeout(300_000);
  const kc = new KubeConfig();
  let c: RolloutCluster;
  const STS = 'db';
  const pods = () => c.pods(STS);
  const statefulSet = () => c.apps.readNamespacedStatefulSet({ namespace: c.ns, name: STS });

  before(async function () {
    c = await rolloutCluster(this, kc, 'iprm');
    await c.apps.createNamespacedStatefulSet({
      namespace: c.ns,
      body: { metadata: { name: STS }, spec: { replicas: REPLICAS, serviceName: STS, podManagementPolicy: 'Parallel', selector: { matchLabels: { app: STS } }, template: gatedTemplate(STS) } },
    });
    await c.createRollout(STS, 'StatefulSet');
    await c.kubectl('rollout', 'status', `statefulset/${STS}`, '--timeout=180s');
  });

  after(async () => {
    if (c?.ns) await deleteNamespace(kc, c.ns);
  });

  it('no pod recreated, every pod at the update revision in place, the hold annotation gone, the rollout Succeeded', async () => {
    const uids = new Map((await pods()).map((p) => [p.metadata?.name ?? '', p.metadata?.uid]));
    assert.equal(uids.size, REPLICAS);
    const image = env.sandbox.images.appV2;
    await c.kubectl('set', 'image', `statefulset/${STS}`, `app=${image}`);
    await until('one pod updated in place', 120_000, async () => (await c.restarts()).some((r) => r.status?.phase === 'Succeeded') || undefined);
    assert.ok((await statefulSet()).metadata?.annotations?.[PARTITION_HOLD_ANNOTATION] !== undefined, 'the change lands while held');
    await c.kubectl('patch', `statefulset/${STS}`, '--type', 'merge', '-p', JSON.stringify({ spec: { updateStrategy: { type: 'OnDelete', rollingUpdate: null } } }));
    let last = '';
    const s = await until('every pod at the update revision, the hold annotation gone', 180_000, async () => {
      const x = await statefulSet();
      const ps = await pods();
      last = JSON.stringify({ ann: x.metadata?.annotations, strategy: x.spec?.updateStrategy, status: x.status, pods: ps.map((p) => [p.spec?.containers[0].image, p.metadata?.labels?.['controller-revision-hash']]) });
      const free = x.metadata?.annotations?.[PARTITION_HOLD_ANNOTATION] === undefined;
      return free && ps.length === REPLICAS && ps.every((p) => p.spec?.containers[0].image === image && p.metadata?.labels?.['controller-revision-hash'] === x.status?.updateRevision) ? x : undefined;
    }, () => last);
    assert.equal(s.spec?.updateStrategy?.type, 'OnDelete', "the user's strategy kept");
    for (const p of await pods()) assert.equal(p.metadata?.uid, uids.get(p.metadata?.name ?? ''), `${p.metadata?.name} not recreated`);
    await rolloutAtRest(c, STS);
  });
});
