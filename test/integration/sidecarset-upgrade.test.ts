// A SidecarSet's new sidecar images reach running pods in place, through the DaemonSet's agents as deploy/ ships
// them. A SidecarSet selecting `mesh: on` (a sidecar `proxy` and a native sidecar `agent`, a restartable init
// container), and three workloads that know nothing of it: a Deployment of 3 HTTP servers behind a Service and a
// StatefulSet of 2, both labelled, spread over the nodes, and an unlabelled Deployment. Checked: the injection into
// the five matching pods only; an image bump of both sidecars reaches the five in place (same pod UIDs, the app
// containers untouched, at most maxUnavailable pods with a sidecar down at any sample, no ContainerRestart beside
// another, 0 failed requests of two clients through the Service, the owners' templates untouched), pre-warmed
// first (updateStrategy.prewarm: the namespace's ImagePrewarm done on every node of the pods before the first
// ContainerRestart is created, then deleted by the coordinator); a pod created
// after the bump gets the new images; an env change restarts nothing, the status counts the pods on the older spec
// and a new pod gets it; `paused` and then `partition` hold, as the coordinator's status says; a
// sidecar image that cannot start stops at the first pod, rolled back in place, and the status names it; an image
// no node can pull stops at the pre-warm, before any pod, and its ImagePrewarm is garbage-collected with the
// SidecarSet.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { SidecarReasons } from '../../src/controllers/sidecarset/plan.js';
import type { SidecarSetSpec } from '../../src/controllers/sidecarset/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { applyCrds } from '../support/kube-apply.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { kubeTest, until } from '../support/kube-test.js';
import { applyDeployFiles } from '../support/kube-users.js';
import { holdFleetRbac, type FleetRbacHold } from '../support/fleet-rbac-hold.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';
import { retag } from '../support/registry-retag.js';
import { agentOnEveryNode } from '../support/rollout-wait.js';
import { containerOf, podReady, PrewarmSamples, SidecarSetFixture, sidecarsDownWatch, specImage } from '../support/sidecarset.js';
import { agentImage, createService, serverContainer, waitReadyEndpoints } from '../support/traffic-fixture.js';
import { waitForRules } from '../support/traffic-trace.js';
import { describeTallies, failedOf, keepAliveClient, newConnectionClient, waitServing, withTraffic } from '../support/traffic.js';

const env = kubeEnv();
const V1 = env.sandbox.images.appV1;
const V2 = env.sandbox.images.appV2;
const SIDECARS = ['proxy', 'agent'];
const MESH = { mesh: 'on' };
const trapping = (name: string, image: string): k8s.V1Container => ({ name, image, args: ['sh', '-c', TRAP_TERM_APP] });
const spread = (app: string) => [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway' as const, labelSelector: { matchLabels: { app } } }];
const podTemplate = (app: string, labels: Record<string, string>, container: k8s.V1Container): k8s.V1PodTemplateSpec => ({
  metadata: { labels: { app, ...labels } },
  spec: { terminationGracePeriodSeconds: 5, topologySpreadConstraints: spread(app), containers: [container] },
});

describe('SidecarSet upgrade in place (the DaemonSet agents, real cluster)', function () {
  this.timeout(600_000);
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  let kc: k8s.KubeConfig;
  let ns = '';
  let scs: SidecarSetFixture;
  let clients: Parameters<typeof withTraffic>[0] = {};
  let fleetRbac: FleetRbacHold | undefined;
  const spec: SidecarSetSpec = { selector: { matchLabels: MESH }, containers: [trapping('proxy', V1)], initContainers: [{ ...trapping('agent', V1), restartPolicy: 'Always' }], updateStrategy: { maxUnavailable: 1, prewarm: true } };
  /** The matching pods (not being deleted), in namespace/name order, as the planner orders them. */
  const meshPods = async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: 'mesh=on' })).items.filter((p) => !p.metadata?.deletionTimestamp).sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  /** Ready, its sidecars on image in the spec and running ready instances, other than those of before (by container ID). */
  const runsImages = (p: k8s.V1Pod, image: string, before?: k8s.V1Pod) =>
    podReady(p) && SIDECARS.every((c) => specImage(p, c) === image && containerOf(p, c)?.state?.running && containerOf(p, c)?.ready && (!before || containerOf(p, c)?.containerID !== containerOf(before, c)?.containerID));

  before(async function () {
    ({ kc, core } = await kubeTest(this));
    apps = kc.makeApiClient(k8s.AppsV1Api);
    await agentOnEveryNode(kc);
    await applyCrds(kc, ['sidecarset.yaml', 'imageprewarm.yaml', 'nodeprewarm.yaml']);
    // The pre-warm's nodes record their part only with the fleet's opt-in RBAC (docs/sidecars.md).
    fleetRbac = await holdFleetRbac(kc, 'sidecarset-upgrade');
    await applyDeployFiles(kc, ['sidecarset-injection.yaml']);
    ns = await createNamespace(kc, 'scsup');
    scs = new SidecarSetFixture(kc, `mesh-${randomBytes(3).toString('hex')}`);
    // Only this test's namespace: other suites on the cluster make pods too.
    await scs.create({ ...spec, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } }, ns, MESH);
    const served = await agentImage(kc);
    await apps.createNamespacedDeployment({ namespace: ns, body: { metadata: { name: 'web' }, spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: podTemplate('web', MESH, serverContainer(served)) } } });
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: { metadata: { name: 'db' }, spec: { replicas: 2, serviceName: 'db', podManagementPolicy: 'Parallel', selector: { matchLabels: { app: 'db' } }, template: podTemplate('db', MESH, trapping('app', V1)) } },
    });
    await apps.createNamespacedDeployment({ namespace: ns, body: { metadata: { name: 'plain' }, spec: { replicas: 1, selector: { matchLabels: { app: 'plain' } }, template: podTemplate('plain', {}, trapping('app', V1)) } } });
    const svc = await createService(kc, ns, 'web', 'web');
    await waitReadyEndpoints(kc, ns, 'web', 3, 180_000);
    const lasting = { maxMs: 600_000, maxRequests: 1_000_000 };
    clients = {
      newConnection: () => newConnectionClient({ host: svc.clusterIp, port: svc.port, everyMs: 20, ...lasting }),
      keepAlive: () => keepAliveClient({ host: svc.clusterIp, port: svc.port, everyMs: 10, ...lasting }, 2),
    };
    await waitForRules({ namespace: ns, name: 'web', ...svc }, 3);
    await waitServing(clients);
  });

  after(async () => {
    await scs?.delete();
    if (ns) await deleteNamespace(kc, ns);
    await fleetRbac?.release();
  });

  it('injects at creation into the five pods of a Deployment of 3 and a StatefulSet of 2, not into the unlabelled one', async () => {
    let seen = '';
    const pods = await until(
      '5 injected pods Ready',
      180_000,
      async () => {
        const ps = await meshPods();
        seen = ps.map((p) => `${p.metadata?.name}@${p.spec?.nodeName}:${p.status?.phase}:${JSON.stringify([...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])].map((c) => [c.name, c.ready, Object.keys(c.state ?? {})[0]]))}`).join(' ');
        return ps.length === 5 && ps.every((p) => runsImages(p, V1)) ? ps : undefined;
      },
      { seen: () => seen },
    );
    for (const p of pods) {
      assert.deepEqual(p.spec?.containers.map((c) => c.name), ['app', 'proxy'], p.metadata?.name);
      assert.deepEqual(p.spec?.initContainers?.map((c) => `${c.name}:${c.restartPolicy}`), ['agent:Always'], p.metadata?.name);
      assert.equal(p.metadata?.annotations?.[scs.annotation], '1');
    }
    assert.equal(new Set(pods.map((p) => p.spec?.nodeName)).size, 3, 'the pods spread over the three nodes');
    const plain = (await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=plain' })).items;
    assert.equal(plain.length, 1);
    assert.deepEqual(plain[0]?.spec?.containers.map((c) => c.name), ['app']);
    assert.equal(plain[0]?.spec?.initContainers, undefined);
    assert.equal(plain[0]?.metadata?.annotations?.[scs.annotation], undefined);
    const s = (await scs.settled(SidecarReasons.complete, 60_000, (x) => x.status?.readyPods === 5)).status!;
    assert.deepEqual({ m: s.matchedPods, i: s.injectedPods, u: s.updatedPods, r: s.readyPods, o: s.olderSpecPods }, { m: 5, i: 5, u: 5, r: 5, o: 0 });
  });

  it('an image bump of both sidecars is pre-warmed, then reaches the five pods in place: same pods, apps untouched, one pod at a time, 0 failed requests', async () => {
    const before = await meshPods();
    const prewarms = new PrewarmSamples(kc, (await scs.read()).metadata.uid ?? '');
    // Every record change is seen (watches): the coordinator deletes the ImagePrewarm, and its records' entries,
    // within a second of the last node's part.
    await prewarms.follow(kc);
    // Every pod status change is seen (a watch), not only those a poll happens to sample.
    const down = await sidecarsDownWatch(kc, ns, 'mesh=on', SIDECARS);
    let mostInFlight = 0;
    let last = '';
    const { result: pods, tallies } = await withTraffic(clients, 2000, async () => {
      await scs.patchSpec({ containers: [trapping('proxy', V2)], initContainers: [{ ...trapping('agent', V2), restartPolicy: 'Always' }] });
      return until(
        'the five pods on the new sidecars and the status Complete',
        300_000,
        async () => {
          const [ps, crs, set] = await Promise.all([meshPods(), scs.restarts(ns), scs.read(), prewarms.sample()]);
          mostInFlight = Math.max(mostInFlight, crs.filter((c) => c.status?.phase !== 'Succeeded' && c.status?.phase !== 'Failed').length);
          last = JSON.stringify({ status: set.status, crs: crs.map((c) => `${c.spec.podName}:${c.status?.phase}`) });
          const complete = set.status?.observedGeneration === set.metadata.generation && set.status?.updatedPods === 5 && set.status?.conditions?.[0]?.reason === SidecarReasons.complete;
          return ps.length === 5 && ps.every((p) => runsImages(p, V2, before.find((b) => b.metadata?.uid === p.metadata?.uid))) && complete ? ps : undefined;
        },
        { everyMs: 100, seen: () => last },
      );
    }).finally(() => {
      down.stop();
      prewarms.stop();
    });
    const mostDown = down.most();
    const text = describeTallies(tallies);
    console.log(`      traffic: ${text}; most pods with a sidecar down at once: ${mostDown}`);
    for (const t of Object.values(tallies)) assert.ok(t.ok > 50, `the clients got answers: ${text}`);
    assert.equal(failedOf(tallies), 0, `no failed request: ${text}`);
    assert.ok(mostDown <= 1, `at most maxUnavailable (1) pods with a sidecar down at once, saw ${mostDown}`);
    assert.equal(mostDown, 1, 'the watch saw the sidecars of a pod down (patched, not yet running the new image) during its upgrade');
    assert.ok(mostInFlight <= 1, `at most maxUnavailable (1) upgrades at once, saw ${mostInFlight}`);
    const byUid = new Map(pods.map((p) => [p.metadata?.uid, p]));
    for (const old of before) {
      const now = byUid.get(old.metadata?.uid);
      assert.ok(now, `pod ${old.metadata?.name} (uid ${old.metadata?.uid}) is still there`);
      assert.equal(containerOf(now, 'app')?.containerID, containerOf(old, 'app')?.containerID, `${old.metadata?.name}: the app container was not touched`);
      assert.equal(containerOf(now, 'app')?.restartCount, containerOf(old, 'app')?.restartCount);
      for (const c of SIDECARS) {
        assert.notEqual(containerOf(now, c)?.containerID, containerOf(old, c)?.containerID, `${old.metadata?.name}: ${c} was recreated`);
        assert.equal(specImage(now, c), V2);
      }
      assert.equal(containerOf(now, 'agent')?.restartCount, (containerOf(old, 'agent')?.restartCount ?? 0) + 1, 'the native sidecar restarted once, in place');
    }
    const crs = await scs.restarts(ns);
    assert.equal(crs.length, 5, 'one ContainerRestart per pod');
    for (const cr of crs) assert.deepEqual(cr.spec.containers.map((x) => x.name).sort(), ['agent', 'proxy'], 'the sidecars alone');
    // The owners know nothing of it: their templates have no sidecar, and neither made a new revision.
    const web = await apps.readNamespacedDeployment({ name: 'web', namespace: ns });
    assert.deepEqual(web.spec?.template.spec?.containers.map((c) => c.name), ['app']);
    assert.equal((await apps.listNamespacedReplicaSet({ namespace: ns, labelSelector: 'app=web' })).items.length, 1);
    const db = await apps.readNamespacedStatefulSet({ name: 'db', namespace: ns });
    assert.deepEqual(db.spec?.template.spec?.containers.map((c) => c.name), ['app']);
    assert.equal(db.spec?.template.spec?.initContainers, undefined);
    assert.equal(db.status?.currentRevision, db.status?.updateRevision);

    // Pre-warmed first: one ImagePrewarm for the namespace, done on the three nodes of the five pods (their own
    // records' completion times) before the first ContainerRestart was created (whole seconds, as the API
    // server keeps creationTimestamp); then the coordinator deletes it.
    assert.deepEqual([...prewarms.created.values()].map((p) => [p.namespace, p.images]), [[ns, [V2]]], 'one ImagePrewarm, for the namespace, of the new image');
    const [pwName, pw] = [...prewarms.created.entries()][0]!;
    const firstRestartMs = Math.min(...crs.map((c) => new Date(c.metadata.creationTimestamp ?? 0).getTime()));
    const done = prewarms.doneOn.get(pwName) ?? new Map<string, number>();
    assert.deepEqual([...done.keys()].sort(), [...new Set(before.map((p) => p.spec?.nodeName))].sort(), `every node of the pods did its part of ${pwName}`);
    const doneMs = Math.max(...done.values());
    assert.ok(pw.createdMs <= firstRestartMs, 'the ImagePrewarm came first');
    assert.ok(Math.floor(doneMs / 1000) * 1000 <= firstRestartMs, `the pre-warm was done (${new Date(doneMs).toISOString()}) before the first ContainerRestart (${new Date(firstRestartMs).toISOString()})`);
    await until('the coordinator to delete the pre-warm', 30_000, async () => ((await prewarms.sample()) === 0 ? true : undefined));
  });

  it('a pod created after the bump gets the new sidecar images', async () => {
    const generation = String((await scs.read()).metadata.generation);
    const p = await core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'late', labels: { ...MESH, app: 'late' } }, spec: { terminationGracePeriodSeconds: 2, containers: [trapping('app', V1)] } } });
    assert.equal(p.metadata?.annotations?.[scs.annotation], generation);
    for (const c of SIDECARS) assert.equal(specImage(p, c), V2, c);
    await until('the late pod running the new sidecars', 90_000, async () => {
      const cur = await core.readNamespacedPod({ namespace: ns, name: 'late' });
      return runsImages(cur, V2) ? cur : undefined;
    });
    await core.deleteNamespacedPod({ namespace: ns, name: 'late', gracePeriodSeconds: 0 });
  });

  it('a change beyond the image (an env) restarts nothing, the status counts the five running pods on the older spec, and a new pod gets it', async () => {
    const crsBefore = (await scs.restarts(ns)).length;
    const before = await meshPods();
    assert.equal((await scs.read()).status?.olderSpecPods, 0, 'after the image bump, every pod has the current spec');
    const env = [{ name: 'MESH_MODE', value: 'strict' }];
    await scs.patchSpec({ containers: [{ ...trapping('proxy', V2), env }] });
    const changed = await scs.settled(SidecarReasons.complete, 60_000, (s) => s.status?.olderSpecPods === 5 && s.status?.matchedPods === 5);
    assert.equal(changed.status?.updatedPods, 5, 'their images are current');
    assert.equal((await scs.restarts(ns)).length, crsBefore, 'no ContainerRestart for a change beyond images');
    for (const p of await meshPods()) {
      const old = before.find((b) => b.metadata?.uid === p.metadata?.uid);
      assert.equal(containerOf(p, 'proxy')?.containerID, containerOf(old!, 'proxy')?.containerID, `${p.metadata?.name}: its proxy was not restarted`);
    }
    const p = await core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'late-env', labels: { ...MESH, app: 'late' } }, spec: { terminationGracePeriodSeconds: 2, containers: [trapping('app', V1)] } } });
    try {
      assert.deepEqual(p.spec?.containers.find((c) => c.name === 'proxy')?.env?.map((e) => ({ name: e.name, value: e.value })), env, 'the new pod gets the new env');
      await scs.settled(SidecarReasons.complete, 60_000, (s) => s.status?.matchedPods === 6 && s.status?.olderSpecPods === 5);
    } finally {
      await core.deleteNamespacedPod({ namespace: ns, name: 'late-env', gracePeriodSeconds: 0 });
    }
  });

  it('paused holds every pod on its sidecars; then partition 3 holds the last three; then partition 0 finishes', async () => {
    // A second tag of V2 (its sidecars run V2 already: the node has it under another name).
    const V3 = await retag(env.sandbox.registry, V2, `scs-${randomBytes(4).toString('hex')}`);
    const crsBefore = (await scs.restarts(ns)).length;
    await scs.patchSpec({ containers: [trapping('proxy', V3)], updateStrategy: { maxUnavailable: 1, paused: true } });
    // The coordinator's sign that it planned this generation and held: the status Paused, no pod updated.
    const paused = await scs.settled(SidecarReasons.paused, 60_000, (s) => s.status?.matchedPods === 5);
    assert.equal(paused.status?.updatedPods, 0);
    assert.deepEqual(paused.status?.podsInFlight, []);
    assert.equal((await scs.restarts(ns)).length, crsBefore, 'no upgrade started while paused');
    for (const p of await meshPods()) assert.equal(specImage(p, 'proxy'), V2, `${p.metadata?.name} kept its sidecar`);

    await scs.patchSpec({ updateStrategy: { maxUnavailable: 1, paused: false, partition: 3 } });
    const parted = await scs.settled(SidecarReasons.partitioned, 180_000, (s) => s.status?.updatedPods === 2 && s.status?.podsInFlight?.length === 0);
    assert.match(parted.status?.message ?? '', /3 injected pod\(s\) kept on older sidecars by partition 3/);
    const pods = await meshPods();
    assert.deepEqual(
      pods.map((p) => `${p.metadata?.name}:${specImage(p, 'proxy') === V3 ? 'new' : 'old'}`),
      pods.map((p, i) => `${p.metadata?.name}:${i < 2 ? 'new' : 'old'}`),
      'the first two in namespace/name order updated, the last three held',
    );
    assert.equal((await scs.restarts(ns)).length, crsBefore + 2);

    await scs.patchSpec({ updateStrategy: { maxUnavailable: 1, partition: 0 } });
    await scs.settled(SidecarReasons.complete, 180_000, (s) => s.status?.updatedPods === 5);
    for (const p of await meshPods()) assert.equal(specImage(p, 'proxy'), V3, p.metadata?.name);
  });

  it('a sidecar image that cannot start stops at the first pod, rolled back in place, and the status names it', async () => {
    const before = await meshPods();
    const good = specImage(before[0]!, 'proxy');
    const crsBefore = (await scs.restarts(ns)).length;
    await scs.patchSpec({ containers: [trapping('proxy', env.sandbox.images.crash)] });
    const failed = await scs.settled(SidecarReasons.failed);
    assert.equal(failed.status?.failures?.length, 1, JSON.stringify(failed.status));
    const f = failed.status!.failures![0]!;
    assert.equal(f.container, 'proxy');
    assert.equal(f.exitCode, 3, JSON.stringify(f));
    assert.match(failed.status?.message ?? '', new RegExp(`pod ${f.pod} container proxy failed`));
    assert.equal((await scs.restarts(ns)).length - crsBefore, 1, 'no pod after the first was started');
    for (const p of await meshPods()) {
      const old = before.find((b) => b.metadata?.uid === p.metadata?.uid);
      assert.ok(old, `pod ${p.metadata?.name} is the same pod`);
      assert.equal(specImage(p, 'proxy'), good, `${p.metadata?.name}: the sidecar back on (or still on) the last good image`);
      assert.equal(containerOf(p, 'app')?.containerID, containerOf(old, 'app')?.containerID, 'the app container was not touched');
    }
  });

  it('a pre-warm that cannot pull stops the upgrade before any pod, naming the node; its ImagePrewarm goes with the SidecarSet', async () => {
    const before = await meshPods();
    const crsBefore = (await scs.restarts(ns)).length;
    const missing = V2.replace(/:[^:/]+$/, `:missing-${randomBytes(4).toString('hex')}`);
    await scs.patchSpec({ containers: [trapping('proxy', missing)] });
    // Each node tries 3 times (backoffLimit 2), 10 s and 20 s apart.
    const failed = await scs.settled(SidecarReasons.prewarmFailed, 180_000);
    assert.match(failed.status?.message ?? '', /pre-warm failed, no pod touched: scs-[0-9a-f]{8}-[0-9a-f]{10}-scsup-[^:]+: node inplace-node[-0-9]*: ImagePullFailed/);
    assert.equal((await scs.restarts(ns)).length, crsBefore, 'no ContainerRestart');
    for (const p of await meshPods()) assert.equal(specImage(p, 'proxy'), specImage(before.find((b) => b.metadata?.uid === p.metadata?.uid)!, 'proxy'), `${p.metadata?.name} kept its sidecar`);
    const prewarms = new PrewarmSamples(kc, failed.metadata.uid ?? '');
    assert.equal(await prewarms.sample(), 1, 'the failed ImagePrewarm is kept (it says why)');
    await scs.delete();
    await until('the garbage collector to delete the ImagePrewarm with its SidecarSet', 60_000, async () => ((await prewarms.sample()) === 0 ? true : undefined));
  });
});
