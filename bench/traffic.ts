// `npm run bench:traffic`: what clients behind a Service see while pods restart, on the real one-node cluster
// with its real kube-proxy. Four replicas of a small HTTP server (test/support/traffic-fixture.ts) behind a
// Service; during each round (and 2 s before and after) one client opens a new connection to the ClusterIP
// every 10 ms and one reuses two keep-alive connections. Per round: failed requests, and the longest time
// between two successful answers. BENCH_ROUNDS (default 5) rounds of each, interleaved:
//   (a) one restart through the agent (ContainerRestart, the DaemonSet's agent), same image;
//   (b) one image change through the agent;
//   (c) three restarts through the agent started 300 ms apart;
// and what Kubernetes does on its own, for comparison (no readiness gate, nothing drains):
//   (d) the image patched in one pod's spec (the kubelet recreates the container);
//   (e) one pod deleted and created again under its name;
//   (f) a Deployment's own rolling update of the same image change (4 replicas, default surge/unavailable).
// Needs scripts/kube-sandbox up and scripts/kube-deploy-agent. Traffic goes only to the cluster's Service IPs.
// BENCH_AGENT_SOCKET=PATH sends (a)-(c) to the agent on that socket (RestartRequest over gRPC, drain 5 s)
// instead of through ContainerRestart objects, to compare two builds of the agent run on the host side by
// side with the DaemonSet's (run them with --watch-namespace inplace-bench-traffic).
// BENCH_SCENARIOS=abc picks scenarios.
import { randomBytes } from 'node:crypto';
import { AppsV1Api, CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type V1Deployment, type V1Pod } from '@kubernetes/client-node';
import { AgentClient } from '../src/api/client.js';
import { isTerminal } from '../src/engine/operation.js';
import { ContainerRestartApi } from '../src/controllers/container-restart/api.js';
import { kubeEnv } from '../test/testbed/kube-env.js';
import { containerRestart, waitForStatus } from '../test/support/container-restarts.js';
import { retag } from '../test/support/registry-retag.js';
import { agentImage, createService, serverContainer, serverPod, waitReadyEndpoints, type ServiceAddress } from '../test/support/traffic-fixture.js';
import { waitForRules } from '../test/support/traffic-trace.js';
import { keepAliveClient, newConnectionClient, withTraffic, type Tally } from '../test/support/traffic.js';

const env = kubeEnv();
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SOCKET = process.env.BENCH_AGENT_SOCKET;
const NS = 'inplace-bench-traffic';
const REPLICAS = 4;
const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One round's outcome. */
interface Round {
  failed: number;
  gapMs: number;
}

/** One way of restarting pods behind a Service. */
interface Scenario {
  key: string;
  label: string;
  svc: () => ServiceAddress;
  /** Starts the change and resolves once it has finished (the pods ready again). */
  run(i: number): Promise<void>;
}

async function main(): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(env.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const crs = new ContainerRestartApi(kc);
  await core.deleteNamespace({ name: NS }).catch(() => undefined);
  while (await core.readNamespace({ name: NS }).then(() => true, () => false)) await sleep(500);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  const imageA = await agentImage(kc);
  const imageB = await retag(env.sandbox.registry, imageA, `bench-traffic-${randomBytes(3).toString('hex')}`);
  const other = (img: string) => (img === imageA ? imageB : imageA);

  for (let i = 0; i < REPLICAS; i++) {
    await core.createNamespacedPod({ namespace: NS, body: serverPod(NS, `gated-${i}`, 'gated', imageA) });
    await core.createNamespacedPod({ namespace: NS, body: serverPod(NS, `plain-${i}`, 'plain', imageA, false) });
  }
  const deployment: V1Deployment = {
    metadata: { name: 'dep', namespace: NS },
    spec: {
      replicas: REPLICAS,
      selector: { matchLabels: { app: 'dep' } },
      template: { metadata: { labels: { app: 'dep' } }, spec: { nodeName: env.nodeName, terminationGracePeriodSeconds: 5, containers: [serverContainer(imageA)] } },
    },
  };
  await apps.createNamespacedDeployment({ namespace: NS, body: deployment });
  const gated = await createService(kc, NS, 'gated', 'gated');
  const plain = await createService(kc, NS, 'plain', 'plain');
  const dep = await createService(kc, NS, 'dep', 'dep');
  for (const s of ['gated', 'plain', 'dep']) await waitReadyEndpoints(kc, NS, s, REPLICAS, 180_000);
  for (const [name, s] of [['gated', gated], ['plain', plain], ['dep', dep]] as const) await waitForRules({ namespace: NS, name, ...s }, REPLICAS);

  let n = 0;
  /** The same restarts through an agent's socket: each op waited for until it ends. */
  const socketRestart = async (pods: string[], gapMs: number, image?: (pod: string) => Promise<string>) => {
    const c = new AgentClient(`unix://${SOCKET}`);
    try {
      const ids: string[] = [];
      for (const [k, pod] of pods.entries()) {
        if (k > 0) await sleep(gapMs);
        const img = image ? await image(pod) : undefined;
        ids.push((await c.restart({ pod: `${NS}/${pod}`, containers: ['app'], images: img ? { app: img } : {}, minReadyMs: 0, minReadySet: true })).id);
      }
      for (const id of ids) {
        for (;;) {
          const op = await c.getOperation(id);
          if (isTerminal(op.state)) {
            if (op.state !== 'Succeeded') throw new Error(`operation ${id}: ${op.state} ${op.error ?? ''}`);
            break;
          }
          await sleep(100);
        }
      }
    } finally {
      c.close();
    }
    await waitReadyEndpoints(kc, NS, 'gated', REPLICAS);
  };
  const agentRestart = async (pods: string[], gapMs: number, image?: (pod: string) => Promise<string>) => {
    if (SOCKET) return socketRestart(pods, gapMs, image);
    const names: string[] = [];
    for (const [k, pod] of pods.entries()) {
      if (k > 0) await sleep(gapMs);
      const name = `r${++n}`;
      const img = image ? await image(pod) : undefined;
      await crs.create(containerRestart(NS, name, { podName: pod, containers: [{ name: 'app', ...(img ? { image: img } : {}) }], strategy: { minReadySeconds: 0 } }));
      names.push(name);
    }
    const done = await Promise.all(names.map((name) => waitForStatus(crs, NS, name, (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 120_000)));
    for (const cr of done) if (cr.status?.phase !== 'Succeeded') throw new Error(`${cr.metadata.name}: ${cr.status?.message}`);
    await waitReadyEndpoints(kc, NS, 'gated', REPLICAS);
  };
  const podImage = async (pod: string) => (await core.readNamespacedPod({ name: pod, namespace: NS })).spec?.containers[0].image ?? imageA;
  const pick = (i: number, k = 0) => `-${(i + k) % REPLICAS}`;
  const restartsOf = async (pod: string) => (await core.readNamespacedPod({ name: pod, namespace: NS })).status?.containerStatuses?.find((c) => c.name === 'app')?.restartCount ?? 0;
  /** Polls the pod (every 100 ms, at most 120 s) until ok holds. */
  const waitPod = async (pod: string, ok: (p: V1Pod) => boolean) => {
    for (const until = Date.now() + 120_000; ; await sleep(100)) {
      const p = await core.readNamespacedPod({ name: pod, namespace: NS }).catch(() => undefined);
      if (p && ok(p)) return;
      if (Date.now() > until) throw new Error(`pod ${NS}/${pod}: not as expected after 120 s: ${JSON.stringify(p?.status?.containerStatuses)}`);
    }
  };

  const scenarios: Scenario[] = [
    { key: 'a', label: 'agent: one restart, same image', svc: () => gated, run: (i) => agentRestart([`gated${pick(i)}`], 0) },
    { key: 'b', label: 'agent: one image change', svc: () => gated, run: (i) => agentRestart([`gated${pick(i, 1)}`], 0, async (p) => other(await podImage(p))) },
    { key: 'c', label: 'agent: three restarts 300 ms apart', svc: () => gated, run: (i) => agentRestart([0, 1, 2].map((k) => `gated${pick(i, k)}`), 300) },
    {
      key: 'd',
      label: 'image patched in the pod spec, no gate',
      svc: () => plain,
      run: async (i) => {
        const pod = `plain${pick(i)}`;
        const next = other(await podImage(pod));
        const was = await restartsOf(pod);
        await core.patchNamespacedPod({ name: pod, namespace: NS, body: { spec: { containers: [{ name: 'app', image: next }] } } }, strategic);
        // The kubelet's own sign that it is done: the container recreated (its status shows the image by the
        // store's first name for the digest, which a retag shares, so the restart count tells) and ready.
        await waitPod(pod, (p) => {
          const c = p.status?.containerStatuses?.find((s) => s.name === 'app');
          return (c?.restartCount ?? 0) > was && c?.ready === true;
        });
        await waitReadyEndpoints(kc, NS, 'plain', REPLICAS);
      },
    },
    {
      key: 'e',
      label: 'pod deleted and created again',
      svc: () => plain,
      run: async (i) => {
        const pod = `plain${pick(i, 2)}`;
        const spec = serverPod(NS, pod, 'plain', await podImage(pod), false);
        await core.deleteNamespacedPod({ name: pod, namespace: NS });
        while (await core.readNamespacedPod({ name: pod, namespace: NS }).then(() => true, () => false)) await sleep(50);
        const created = await core.createNamespacedPod({ namespace: NS, body: spec });
        // The new pod (its own uid) Ready, then its address a ready endpoint again.
        await waitPod(pod, (p) => p.metadata?.uid === created.metadata?.uid && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true);
        await waitReadyEndpoints(kc, NS, 'plain', REPLICAS);
      },
    },
    {
      key: 'f',
      label: "Deployment's rolling update, same image change",
      svc: () => dep,
      run: async () => {
        const d = await apps.readNamespacedDeployment({ name: 'dep', namespace: NS });
        const next = other(d.spec?.template.spec?.containers[0].image ?? imageA);
        const updated = await apps.patchNamespacedDeployment({ name: 'dep', namespace: NS, body: { spec: { template: { spec: { containers: [{ name: 'app', image: next }] } } } } }, strategic);
        const gen = updated.metadata?.generation ?? 0;
        for (;;) {
          const s = (await apps.readNamespacedDeployment({ name: 'dep', namespace: NS })).status;
          if ((s?.observedGeneration ?? 0) >= gen && s?.updatedReplicas === REPLICAS && s.readyReplicas === REPLICAS && (s.replicas ?? 0) === REPLICAS) break;
          await sleep(200);
        }
        await waitReadyEndpoints(kc, NS, 'dep', REPLICAS);
      },
    },
  ];
  const only = process.env.BENCH_SCENARIOS;
  const chosen = scenarios.filter((s) => !only || only.includes(s.key));
  const results = new Map<string, Round[]>(chosen.map((s) => [s.key, []]));
  for (let i = 0; i < ROUNDS; i++) {
    for (const s of chosen) {
      const svc = s.svc();
      const { tallies } = await withTraffic(
        {
          newConnections: () => newConnectionClient({ host: svc.clusterIp, port: svc.port }),
          keepAlive: () => keepAliveClient({ host: svc.clusterIp, port: svc.port }, 2),
        },
        2000,
        () => s.run(i),
      );
      const all: Tally[] = Object.values(tallies);
      const r = { failed: all.reduce((k, t) => k + t.failed, 0), gapMs: Math.max(...all.map((t) => t.longestGapMs)) };
      results.get(s.key)!.push(r);
      console.error(`round ${i + 1} (${s.key}) ${s.label}: ${r.failed} failed, longest gap ${r.gapMs} ms`);
      await sleep(1500); // the kubelet's restart back-off of the same container (1 s in the test cluster)
    }
  }

  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const base = results.get('d');
  console.log(`\nrestart traffic${SOCKET ? ` (agent at ${SOCKET})` : ''}, ${ROUNDS} rounds each, new connections every 10 ms + 2 keep-alive connections, 4 replicas`);
  console.log('| scenario | failed requests per round | rounds with 0 failed | longest gap, median (max) | gap vs (d) |');
  console.log('|---|---|---|---|---|');
  for (const s of chosen) {
    const rs = results.get(s.key)!;
    const gap = median(rs.map((r) => r.gapMs));
    const ratio = base ? (gap / median(base.map((r) => r.gapMs))).toFixed(2) : '-';
    console.log(`| (${s.key}) ${s.label} | ${rs.map((r) => r.failed).join(', ')} | ${rs.filter((r) => r.failed === 0).length}/${rs.length} | ${gap} ms (${Math.max(...rs.map((r) => r.gapMs))} ms) | ${ratio} |`);
  }
  await core.deleteNamespace({ name: NS }).catch(() => undefined);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
