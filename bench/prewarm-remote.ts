// `npm run bench:prewarm-remote`: the fleet pre-warm alone, as the cluster's own agents run it, in issue 18's
// remote-like setting: one fresh image of one 30 MiB layer, pulled by every real node of the test cluster at once
// (maxParallelNodes 5, as a rollout asks) through a loopback proxy throttled per connection (4 MiB/s). The
// baseline, in the same run: one node's containerd pulling the same kind of image through the same proxy by
// itself (CRI PullImage, no agent), the time the pull alone takes here. Per round it prints where the time went:
// the ImagePrewarm created; each node's record Pulling and Succeeded (the agent's own times); each blob download
// at the proxy; and when the ImagePrewarm's status said every node was done.
//
// With --host-agents N the agents are this checkout's code instead of the DaemonSet's: N agents run on this
// host as the shipped ServiceAccount, each playing one bare Node object with its own containerd, whose pulls
// of the cluster's registry go through the same proxy (a containerd mirror).
//
// Usage: node dist/bench/prewarm-remote.js [--rounds 3] [--rate 4] [--mib 30] [--host-agents 3]
// Needs scripts/kube-sandbox up --nodes 3 with the agents deployed. It installs the optional fleet RBAC of
// deploy/ for the run when it is missing (and removes what it added).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, NODE_PREWARM_PLURAL, type ImagePrewarm, type NodePrewarm } from '../src/controllers/image-prewarm/types.js';
import { CriClient } from '../src/runtime/cri/client.js';
import { startAgent, type AgentProcess } from '../test/support/agent-process.js';
import { deleteNodes, ensureNode } from '../test/support/kube-apply.js';
import { AGENT_SA, agentKubeconfig } from '../test/support/kube-shipped-rbac.js';
import { startMiniContainerd, type MiniContainerd } from '../test/support/mini-containerd.js';
import { kubeEnv } from '../test/testbed/kube-env.js';
import { holdFleetRbac } from '../test/support/fleet-rbac-hold.js';
import { buildImage, buildLayer, pushImage, seededBytes } from '../test/support/registry-images.js';
import { startRegistryProxy, type BlobDownload } from '../test/support/registry-proxy.js';

const exec = promisify(execFile);
function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}
const ROUNDS = Number(arg('rounds', '3'));
const RATE_MIB = Number(arg('rate', '4'));
const LAYER_MIB = Number(arg('mib', '30'));
const HOST_AGENTS = Number(arg('host-agents', '0'));
const HOST_LABEL = 'inplace-agent.bench/prewarm-remote';
const MiB = 1024 * 1024;
const env = kubeEnv();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(env.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  let nodes = env.nodes.map((n) => n.name);
  const commit = (await exec('git', ['rev-parse', '--short', 'HEAD']).catch(() => ({ stdout: '?' }))).stdout.trim();
  const ready = (await core.listNode()).items.filter((n) => nodes.includes(n.metadata?.name ?? '') && n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
  if (ready.length !== nodes.length) throw new Error(`not every node is Ready: ${nodes.join(', ')}`);
  // The DaemonSet's agents need the optional fleet RBAC; held by reference, so a test that ends meanwhile keeps it.
  const rbac = await holdFleetRbac(kc, 'bench-prewarm-remote');
  let blobs: BlobDownload[] = [];
  const proxy = await startRegistryProxy(env.sandbox.registry, (b) => blobs.push(b));
  proxy.setRate(RATE_MIB * MiB);
  let cri = env.nodes.map((n) => new CriClient(n.criEndpoint));
  let selector: Record<string, string> = { 'kubernetes.io/os': 'linux' };
  let agentsNote = 'the DaemonSet\'s agents';
  const containerds: MiniContainerd[] = [];
  const hostAgents: AgentProcess[] = [];
  let refHost = proxy.host;
  if (HOST_AGENTS > 0) {
    // Bare nodes, each with its own containerd pulling the cluster's registry through the proxy, and an agent
    // of this checkout as the shipped ServiceAccount.
    nodes = Array.from({ length: HOST_AGENTS }, (_, i) => `prw-${i}`);
    selector = { [HOST_LABEL]: 'yes' };
    refHost = env.sandbox.registry;
    for (const n of nodes) {
      await ensureNode(kc, n, { [HOST_LABEL]: 'yes' });
      // A token bound to this node's Node object: the node-isolation policy refuses an agent token naming none.
      const agentKc = await agentKubeconfig(kc, AGENT_SA, n);
      const c = await startMiniContainerd(`/tmp/prw-${process.pid}-${n.slice(-1)}`, { [env.sandbox.registry]: proxy.host });
      containerds.push(c);
      hostAgents.push(await startAgent(['--runtime', 'cri', '--cri-endpoint', c.endpoint, '--kubeconfig', agentKc, '--node-name', n]));
    }
    for (const c of cri) c.close();
    cri = containerds.map((c) => new CriClient(c.endpoint));
    agentsNote = `${HOST_AGENTS} agents of this checkout on bare nodes, each with its own containerd`;
  }
  console.log(`bench:prewarm-remote at ${commit}, ${new Date().toISOString()}: ${nodes.length} nodes (${agentsNote}), one ${LAYER_MIB} MiB layer, ${RATE_MIB} MiB/s per connection through ${proxy.host}`);
  const totals: { alone: number; pw: number; pulls: number[]; startLag: number[]; doneLag: number }[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const image = async () => {
        const seed = randomBytes(4).toString('hex');
        const img = buildImage([buildLayer([{ path: `bench/${seed}`, data: seededBytes(seed, LAYER_MIB * MiB) }])], seed);
        return (await pushImage({ registry: env.sandbox.registry }, `bench-prewarm-${seed}`, 'v1', img)).replace(env.sandbox.registry, refHost);
      };
      // The baseline: the pull alone, on the first node, by its containerd.
      const lone = await image();
      blobs = [];
      const t0 = Date.now();
      await cri[0]!.pullImage({ image: { image: lone }, auth: null }, { timeoutMs: 300_000 });
      const alone = Date.now() - t0;
      await cri[0]!.removeImage(lone).catch(() => undefined);

      const ref = await image();
      const name = `bench-remote-${round}-${randomBytes(3).toString('hex')}`;
      blobs = [];
      const created = Date.now();
      await custom.createClusterCustomObject({
        group: FLEET_GROUP,
        version: FLEET_VERSION,
        plural: IMAGE_PREWARM_PLURAL,
        body: { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'ImagePrewarm', metadata: { name }, spec: { images: [ref], nodeSelector: selector, maxParallelNodes: 5, backoffLimit: 2 } },
      });
      const seen: Record<string, { pulling?: number; succeeded?: number }> = {};
      let statusDone = 0;
      const deadline = Date.now() + 300_000;
      while (!statusDone) {
        if (Date.now() > deadline) throw new Error(`pre-warm ${name} not done in 300 s`);
        const pw = (await custom.getClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, name })) as ImagePrewarm;
        const st = pw.status;
        if (st && st.observedGeneration === pw.metadata.generation && (st.desired ?? 0) > 0 && st.succeeded === st.desired) statusDone = Date.now();
        const list = (await custom.listClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL })) as { items: NodePrewarm[] };
        for (const np of list.items) {
          const e = np.status?.prewarms?.[name];
          const node = np.metadata.name;
          if (!e || !nodes.includes(node)) continue;
          const s = (seen[node] ??= {});
          const img = e.images[0];
          if (img?.startTime) s.pulling = Date.parse(img.startTime);
          if (e.phase === 'Succeeded' && img?.completionTime) s.succeeded = Date.parse(img.completionTime);
        }
        await sleep(100);
      }
      await sleep(500); // the proxy's last blob callbacks
      const f = (ms: number) => `${(ms / 1000).toFixed(2).padStart(6)} s`;
      console.log(`round ${round}: ${name}; the pull alone on ${nodes[0]}: ${f(alone)}`);
      for (const node of nodes) console.log(`  ${node.padEnd(16)} record Pulling from ${f((seen[node]?.pulling ?? NaN) - created)}, Succeeded at ${f((seen[node]?.succeeded ?? NaN) - created)}`);
      for (const b of blobs.sort((a, b) => a.start - b.start)) console.log(`  proxy blob ${b.digest.slice(7, 19)} ${f(b.start - created)} .. ${f(b.end - created)} (${f(b.end - b.start)})`);
      const lastDone = Math.max(...nodes.map((n) => seen[n]?.succeeded ?? NaN));
      console.log(`  status: every node done at ${f(statusDone - created)} (last record's Succeeded ${f(lastDone - created)})`);
      totals.push({ alone, pw: statusDone - created, pulls: nodes.map((n) => (seen[n]?.succeeded ?? NaN) - (seen[n]?.pulling ?? NaN)), startLag: nodes.map((n) => (seen[n]?.pulling ?? NaN) - created), doneLag: statusDone - lastDone });
      await custom.deleteClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, name }).catch(() => undefined);
      for (const c of cri) await c.removeImage(ref).catch(() => undefined);
    }
    const s = (xs: number[]) => `${(median(xs) / 1000).toFixed(2)} s`;
    console.log(`\nmedians over ${ROUNDS} rounds: the pull alone ${s(totals.map((t) => t.alone))}; pre-warm of ${nodes.length} nodes, created to status done ${s(totals.map((t) => t.pw))}; ` +
      `created to a record's Pulling ${s(totals.flatMap((t) => t.startLag))}; a node's pull (record Pulling to Succeeded) ${s(totals.flatMap((t) => t.pulls))}; last record Succeeded to status done ${s(totals.map((t) => t.doneLag))}`);
  } finally {
    for (const a of hostAgents) await a.stop().catch(() => undefined);
    for (const c of containerds) await c.stop().catch(() => undefined);
    if (HOST_AGENTS > 0) {
      await deleteNodes(kc, nodes);
      for (const n of nodes) await custom.deleteClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, name: n }).catch(() => undefined);
    }
    await proxy.close();
    for (const c of cri) c.close();
    await rbac.release();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
