// A Deployment rolled out in place by the DaemonSet's agents, with the stock verbs: deploy/ as
// scripts/kube-deploy-agent installs it (the hold policy among it), a Deployment of 6 HTTP servers behind a
// Service, and a two-line InPlaceRollout beside it. `kubectl set image`, then `kubectl rollout undo`, then
// `kubectl rollout restart`, each followed by `kubectl rollout status`, must keep every pod (UID, IP) in the one
// ReplicaSet that holds pods, never have more than the Deployment's maxUnavailable (25 % of 6: 1) unready as a
// watch samples them, unpause the Deployment, and fail no request of two clients through the Service.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { KubeConfig, KubernetesObjectApi, type V1Pod } from '@kubernetes/client-node';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { DEPLOYMENT_HOLD_ANNOTATION } from '../../src/controllers/rollout/workloads/hold.js';
import { DEPLOYMENT_REASON } from '../../src/controllers/rollout/workloads/deployment-view.js';
import { historyName } from '../../src/controllers/rollout/workloads/history.js';
import { POD_TEMPLATE_ANNOTATION } from '../../src/controllers/rollout/plan-types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { deleteNamespace } from '../support/kube-cluster.js';
import { applyDeployFiles, deployObjects, until } from '../support/kube-users.js';
import { retag } from '../support/registry-retag.js';
import { rolloutCluster, sampleUnready, watchRolloutStatus, type RolloutCluster } from '../support/rollout-cluster.js';
import { agentImage, createService, serverContainer, waitReadyEndpoints } from '../support/traffic-fixture.js';
import { waitForRules } from '../support/traffic-trace.js';
import { describeFailures, describeTallies, failedOf, keepAliveClient, newConnectionClient, waitServing, withTraffic } from '../support/traffic.js';

const env = kubeEnv();
const NAME = 'web';
const REPLICAS = 6;
/** The Deployment's default maxUnavailable, 25 % of 6 rounded down. */
const MAX_UNAVAILABLE = 1;

describe("A Deployment rolled out in place by the DaemonSet's agents, with kubectl's own verbs (real cluster)", function () {
  this.timeout(900_000);
  const kc = new KubeConfig();
  let c: RolloutCluster;
  let served = '';
  let next = '';
  let clients: Parameters<typeof withTraffic>[0] = {};
  const pods = () => c.pods(NAME);
  const replicaSets = () => c.replicaSets(NAME);
  const cid = (p: V1Pod) => p.status?.containerStatuses?.find((s) => s.name === 'app')?.containerID ?? '';
  const restarts = () => c.restarts();
  const deployment = () => c.apps.readNamespacedDeployment({ namespace: c.ns, name: NAME });
  const images = async () => [...new Set((await pods()).map((p) => p.spec?.containers[0].image))];

  before(async function () {
    c = await rolloutCluster(this, kc, 'iprd');
    served = await agentImage(kc);
    next = await retag(env.sandbox.registry, served, `iprd-${randomBytes(4).toString('hex')}`);
    await c.createDeployment(NAME, REPLICAS, {
      metadata: { labels: { app: NAME } },
      spec: {
        terminationGracePeriodSeconds: 5,
        // The agent drains through this condition: a pod being updated reads not Ready.
        readinessGates: [{ conditionType: READY_CONDITION }],
        topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { app: NAME } } }],
        containers: [serverContainer(served)],
      },
    });
    const svc = await createService(kc, c.ns, NAME, NAME);
    await c.createRollout(NAME, 'Deployment');
    await waitReadyEndpoints(kc, c.ns, NAME, REPLICAS, 180_000);
    const lasting = { maxMs: 900_000, maxRequests: 1_000_000 };
    clients = {
      newConnection: () => newConnectionClient({ host: svc.clusterIp, port: svc.port, everyMs: 20, ...lasting }),
      keepAlive: () => keepAliveClient({ host: svc.clusterIp, port: svc.port, everyMs: 10, ...lasting }, 2),
    };
    await waitForRules({ namespace: c.ns, name: NAME, ...svc }, REPLICAS);
    await waitServing(clients);
  });

  after(async () => {
    if (c?.ns) await deleteNamespace(kc, c.ns);
  });

  /** Runs the kubectl verb and `kubectl rollout status` under traffic; checks what every verb must keep. */
  async function inPlace(verb: string[]): Promise<Map<string, V1Pod>> {
    const before = new Map((await pods()).map((p) => [p.metadata?.name ?? '', p]));
    assert.equal(before.size, REPLICAS);
    const [holding] = (await replicaSets()).filter((r) => (r.spec?.replicas ?? 0) > 0);
    const unready = await sampleUnready(kc, c.ns, NAME, () => REPLICAS);
    const t0 = Date.now();
    const { tallies } = await withTraffic(clients, 2000, async () => {
      await c.kubectl(...verb);
      // Exit 0, or the call throws.
      return c.kubectl('rollout', 'status', `deployment/${NAME}`, '--timeout=300s');
    }).finally(() => unready.stop());
    const text = describeTallies(tallies);
    console.log(`      traffic: ${text}; most unready at once: ${unready.max()}`);
    if (failedOf(tallies) > 0) {
      // Each failure beside the pod restarts it fell in, for reading (the assertion below fails the test).
      const spans = (await restarts())
        .filter((r) => Date.parse(r.status?.startTime ?? '') >= t0 - 1000)
        .map((r) => ({ name: `${r.metadata?.name} (${r.spec.podName})`, from: Date.parse(r.status?.startTime ?? ''), to: Date.parse(r.status?.completionTime ?? '') || Date.now() }));
      for (const line of describeFailures(tallies, spans, t0)) console.log(`      failed: ${line}`);
    }
    const after = await pods();
    assert.deepEqual(after.map((p) => p.metadata?.uid).sort(), [...before.values()].map((p) => p.metadata?.uid).sort(), 'the same pods');
    for (const p of after) assert.equal(p.status?.podIP, before.get(p.metadata?.name ?? '')?.status?.podIP, `${p.metadata?.name}: same IP`);
    const rss = await replicaSets();
    const withPods = rss.filter((r) => (r.spec?.replicas ?? 0) > 0);
    assert.deepEqual(withPods.map((r) => r.metadata?.name), [holding.metadata?.name], 'the pods stay in their one ReplicaSet');
    assert.deepEqual(rss.map((r) => r.metadata?.name).sort(), [holding.metadata?.name, historyName(NAME)].sort(), 'no other ReplicaSet: the history one, with 0 replicas, keeps the previous template');
    assert.ok(unready.max() <= MAX_UNAVAILABLE, `at most maxUnavailable (${MAX_UNAVAILABLE}) pods unready at once; saw ${unready.max()}`);
    const d = await until('the Deployment released', 60_000, async () => {
      const x = await c.apps.readNamespacedDeployment({ namespace: c.ns, name: NAME });
      return x.spec?.paused !== true ? x : undefined;
    });
    assert.notEqual(d.spec?.paused, true, 'spec.paused false (the API server omits false)');
    assert.equal(d.metadata?.annotations?.[DEPLOYMENT_HOLD_ANNOTATION], undefined, 'the hold annotation removed');
    assert.equal(d.status?.updatedReplicas, REPLICAS, "the Deployment's own count");
    for (const t of Object.values(tallies)) assert.ok(t.ok > 50, `the clients got answers: ${text}`);
    assert.equal(failedOf(tallies), 0, `no failed request: ${text}`);
    return before;
  }

  /** Each pod runs a new app container, on `image`. */
  const newContainers = async (before: Map<string, V1Pod>, image: string) => {
    for (const p of await pods()) {
      assert.equal(p.spec?.containers[0].image, image);
      assert.notEqual(cid(p), cid(before.get(p.metadata?.name ?? '') as V1Pod), `${p.metadata?.name}: a new container`);
    }
  };

  it('kubectl set image: the same pods on the new image, one ReplicaSet with pods, never more than maxUnavailable unready, unpaused, 0 failed requests', async () => {
    await newContainers(await inPlace(['set', 'image', `deployment/${NAME}`, `app=${next}`]), next);
    const held = (await replicaSets()).find((r) => (r.spec?.replicas ?? 0) > 0);
    assert.equal(held?.spec?.template?.spec?.containers[0].image, next, "the ReplicaSet's template carries the new image");
    assert.match(await c.kubectl('rollout', 'history', `deployment/${NAME}`), /^1\s.*\n2\s/m, 'two revisions: the previous template and the one the pods run');
  });

  it('kubectl rollout undo: back to the previous image in place, the same checks', async () => {
    await newContainers(await inPlace(['rollout', 'undo', `deployment/${NAME}`]), served);
    const d = await c.apps.readNamespacedDeployment({ namespace: c.ns, name: NAME });
    assert.equal(d.spec?.template.spec?.containers[0].image, served, "the Deployment's template is the previous one");
  });

  it('kubectl rollout restart: every container restarted in place, the same checks', async () => {
    const before = await inPlace(['rollout', 'restart', `deployment/${NAME}`]);
    await newContainers(before, served);
    for (const p of await pods()) assert.ok(p.metadata?.annotations?.['kubectl.kubernetes.io/restartedAt'], `${p.metadata?.name}: the template's annotation`);
    assert.deepEqual(await images(), [served]);
  });

  it('inplacectl rollout history: the revisions with the pods that run each; rollout undo of a Deployment not held names kubectl rollout undo', async () => {
    const h = await c.inplacectl('rollout', 'history', NAME, '-n', c.ns);
    assert.equal(h.code, 0, h.stderr);
    assert.match(h.stdout, /^REVISION\s+HASH\s+IMAGES\s+PODS$/m);
    assert.match(h.stdout, /^\d+\s+\S+ \(target\)\s+app=\S+\s+6: /m, 'the six pods on the revision of the template');
    assert.match(h.stdout, new RegExp(`^\\d+\\s+inplace-previous\\s+app=\\S+\\s+0$`, 'm'), 'the history ReplicaSet, no pod on it');
    const u = await c.inplacectl('rollout', 'undo', NAME, '-n', c.ns);
    assert.equal(u.code, 2, u.stdout);
    assert.match(u.stderr, /not held: kubectl rollout undo deployment\/web is carried out in place/);
  });

  it("kubectl scale 6 -> 9 in the middle of a rollout: the new pods are born on the new template (the ReplicaSet's, marked), never restarted; the six updated in place", async () => {
    const image = await retag(env.sandbox.registry, served, `iprd-${randomBytes(4).toString('hex')}`);
    const before = new Set((await pods()).map((p) => p.metadata?.uid));
    const firsts = new Set((await restarts()).map((r) => r.metadata.name));
    await c.kubectl('set', 'image', `deployment/${NAME}`, `app=${image}`);
    await until('the first pod update under way', 120_000, async () => ((await restarts()).some((r) => !firsts.has(r.metadata.name)) ? true : undefined));
    // Marked before the first update: the ReplicaSet's template the target plus the mark, the Deployment held.
    const held = await until("the ReplicaSet's template marked, on the new image", 60_000, async () => {
      const t = (await replicaSets()).find((r) => (r.spec?.replicas ?? 0) > 0)?.spec?.template;
      return t?.metadata?.annotations?.[POD_TEMPLATE_ANNOTATION] !== undefined ? t : undefined;
    });
    assert.equal(held.spec?.containers[0].image, image);
    assert.equal((await deployment()).spec?.paused, true, 'still held');
    await c.kubectl('scale', `deployment/${NAME}`, '--replicas=9');
    // Exit 0, or the call throws.
    await c.kubectl('rollout', 'status', `deployment/${NAME}`, '--timeout=300s');
    const d = await until('the Deployment released', 60_000, async () => ((await deployment()).spec?.paused !== true ? deployment() : undefined));
    assert.equal(d.status?.updatedReplicas, 9, "the Deployment's own count");
    const after = await pods();
    assert.equal(after.length, 9);
    for (const p of after) assert.equal(p.spec?.containers[0].image, image, `${p.metadata?.name} on the new image`);
    assert.deepEqual(after.filter((p) => before.has(p.metadata?.uid)).length, REPLICAS, 'the six pods kept');
    const born = after.filter((p) => !before.has(p.metadata?.uid));
    const updated = new Set((await restarts()).filter((r) => !firsts.has(r.metadata.name)).map((r) => r.spec.podName));
    for (const p of born) {
      const st = p.status?.containerStatuses?.find((x) => x.name === 'app');
      assert.equal(st?.restartCount, 0, `${p.metadata?.name}: its first container`);
      assert.ok(!updated.has(p.metadata?.name ?? ''), `${p.metadata?.name}: no ContainerRestart`);
    }
    assert.equal(born.length, 3);
    assert.equal(updated.size, REPLICAS, 'a ContainerRestart for each of the six, none for the three');
    assert.equal((await replicaSets()).filter((r) => (r.spec?.replicas ?? 0) > 0).length, 1, 'one ReplicaSet with pods');
    await c.kubectl('scale', `deployment/${NAME}`, `--replicas=${REPLICAS}`);
    await c.kubectl('rollout', 'status', `deployment/${NAME}`, '--timeout=120s');
  });

  it('kubectl set env: handed over to the stock rolling update, the status naming the field; it completes', async () => {
    const before = new Set((await pods()).map((p) => p.metadata?.uid));
    const st = await watchRolloutStatus(kc, c.ns, NAME);
    try {
      await c.kubectl('set', 'env', `deployment/${NAME}`, 'MODE=two');
      await c.kubectl('rollout', 'status', `deployment/${NAME}`, '--timeout=300s');
      await until('the hand-over reported', 30_000, async () => (st.seen.some((x) => x.reason === DEPLOYMENT_REASON.handedOver) ? true : undefined));
    } finally {
      st.stop();
    }
    const h = st.seen.find((x) => x.reason === DEPLOYMENT_REASON.handedOver);
    assert.match(h?.message ?? '', /spec\.containers\[app\]\.env changed/);
    const after = await pods();
    assert.equal(after.length, REPLICAS);
    for (const p of after) {
      assert.ok(!before.has(p.metadata?.uid), `${p.metadata?.name}: recreated by the stock rolling update`);
      assert.deepEqual(p.spec?.containers[0].env?.map((e) => [e.name, e.value]), [['MODE', 'two']]);
    }
    const d = await deployment();
    assert.notEqual(d.spec?.paused, true);
    assert.equal(d.status?.updatedReplicas, REPLICAS);
  });

  it('the hold policies absent: the rollout says the Deployment is not held and what to do; the stock controller rolls it out, nothing is recreated by the agents', async () => {
    const bindings = deployObjects('workload-hold-policy.yaml').filter((o) => o.kind === 'MutatingAdmissionPolicyBinding');
    const objects = kc.makeApiClient(KubernetesObjectApi);
    const crsBefore = (await restarts()).length;
    const image = await retag(env.sandbox.registry, served, `iprd-${randomBytes(4).toString('hex')}`);
    /** Whether a template change of the Deployment is paused at admission now (a server dry run). */
    const heldNow = async () => /"paused": true/.test(await c.kubectl('set', 'image', `deployment/${NAME}`, `app=${image}-probe`, '--dry-run=server', '-o', 'json'));
    const st = await watchRolloutStatus(kc, c.ns, NAME);
    try {
      for (const b of bindings) await objects.delete(b);
      await until('the API server without the hold', 30_000, async () => ((await heldNow()) ? undefined : true));
      await c.kubectl('set', 'image', `deployment/${NAME}`, `app=${image}`);
      await c.kubectl('rollout', 'status', `deployment/${NAME}`, '--timeout=300s');
      await until('the rollout saying the Deployment is not held', 30_000, async () => (st.seen.some((x) => x.reason === DEPLOYMENT_REASON.notHeld) ? true : undefined));
    } finally {
      st.stop();
      await applyDeployFiles(kc, ['workload-hold-policy.yaml']);
      await until('the API server with the hold again', 30_000, async () => ((await heldNow()) ? true : undefined));
    }
    const n = st.seen.find((x) => x.reason === DEPLOYMENT_REASON.notHeld);
    assert.match(n?.message ?? '', /not held.*install deploy\/workload-hold-policy\.yaml.*pause it yourself/);
    assert.equal((await restarts()).length, crsBefore, 'no ContainerRestart: the agents did nothing to the pods');
    for (const p of await pods()) assert.equal(p.spec?.containers[0].image, image);
  });
});
