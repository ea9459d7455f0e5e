// `npm run bench:scale` (issue 42): one in-place rollout of a StatefulSet of 10 pods a node, on 100, 300 (and
// 1000) KWOK nodes of a private control plane (scripts/scale-sandbox: real etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler; kwok plays every kubelet). Real: the agent's rollout coordinator
// (coordinator.ts, the daemon's own wiring) and the agent's node components, one set a node (node-agents.ts, many
// in one process), each with a token of the agent's ServiceAccount bound to an agent pod on its node, under
// deploy/'s RBAC and admission policies. Simulated: the container runtime (sim-runtime.ts, read from the pods'
// statuses; a pull is a sleep) and the kubelet (kwok, with the harness's Stages in bench/scale/stages/).
//
// Per row: the rollout's time from the template change until the rollout says Succeeded with every pod updated,
// the time a wave (a budget's worth of pods, maxUnavailable of the replicas), the API requests a pod by who sent
// them (the API server's audit log), the watches open at the end and the watch events sent a pod, the coordinator's
// RSS and CPU, the node agents' (their process divided by the nodes), and the CPU of the API server, etcd, kwok and
// the controller-manager. Then growth ratios between the rows.
//
// Usage: node dist/bench/scale/run.js [--nodes 100,300] [--pods 1000 | --pods 0 --pods-per-node 10]
//        [--max-unavailable 10%] [--pull-ms 500] [--keep]   (--pods: that many pods on every row, spread by the
//        scheduler, so that the rows differ in nodes alone; 4-6 minutes a row here, docs/benchmarks.md)
//        (--keep leaves the last row's cluster up: scripts/scale-sandbox down)
import { spawn, type ChildProcess } from 'node:child_process';
import { renameSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { AppsV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, type InPlaceRollout } from '../../src/controllers/rollout/types.js';
import { agentKubeconfigs, agentPods, APP, COORDINATOR_NODE, createWorkload, IMAGES, installAgent, kubectl, NS, sandbox, sandboxEnv, sleep, waitWorkload, type SandboxEnv } from './cluster.js';
import { auditRequests, cpuSeconds, delta, isRead, isReview, isStoredWrite, metricSums, rssMiB, type Actor, type Request } from './measure.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : def;
}
const NODES = arg('nodes', '100,300').split(',').map(Number);
const PER_NODE = Number(arg('pods-per-node', '10'));
/** The same number of pods on every row (0: PER_NODE a node instead): per-pod costs against the node count alone. */
const PODS = Number(arg('pods', '1000'));
const MAX_UNAVAILABLE = arg('max-unavailable', '10%');
const PULL_MS = Number(arg('pull-ms', '500'));
const KEEP = process.argv.includes('--keep');
const ROLLOUT_TIMEOUT_MS = 540_000;
const HERE = path.dirname(new URL(import.meta.url).pathname);
const ROOT = path.resolve(HERE, '../../..');
const STAGES = ['pod-container-ids.yaml', 'pod-image-change.yaml'].map((f) => path.join(ROOT, 'bench/scale/stages', f)).join(':');
const say = (s: string) => process.stderr.write(`bench:scale: ${s}\n`);

/** What one row measured. */
interface Row {
  nodes: number;
  pods: number;
  budget: number;
  /** The most pods the rollout's status listed in flight at once (read every 0.5 s). */
  peakInFlight: number;
  waves: number;
  ms: number;
  requests: Request[];
  watchesOpen: Map<string, number>;
  /** Watches the agents started from their start to the rollout's end, by who and resource. */
  agentWatches: Map<string, number>;
  watchEvents: Map<string, number>;
  listedObjects: Map<string, number>;
  cpu: Record<string, number>;
  coordinatorRss: { now: number; peak: number };
  nodesRss: { now: number; peak: number };
  agentsStartMs: number;
  coordinatorStartRss: number;
  /** The simulated runtimes' pod lists from the node side's start to its stop (a CRI ListPodSandbox each). */
  podLists: number;
}

/** The budget as the coordinator computes it: an integer, or a percent of the replicas rounded down, at least 1. */
function budgetOf(v: string, replicas: number): number {
  return v.endsWith('%') ? Math.max(1, Math.floor((Number(v.slice(0, -1)) * replicas) / 100)) : Math.max(1, Number(v));
}

/** A started process and the lines it printed so far. */
type Started = ChildProcess & { lines: string[] };

/** Starts a process at the lowest priority; resolves once it printed a line starting with `word`. */
function startUntil(args: string[], word: string, env: NodeJS.ProcessEnv = {}): Promise<Started> {
  const p = Object.assign(spawn('nice', ['-n', '19', process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } }), { lines: [] as string[] });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: p.stdout! });
    lines.on('line', (l) => {
      p.lines.push(l);
      if (l.startsWith(word)) resolve(p);
    });
    p.once('exit', (code) => reject(new Error(`${args[0]} exited (${code}) before "${word}"`)));
  });
}

async function stopProcess(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null) return;
  const done = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await Promise.race([done, sleep(20_000)]);
  if (p.exitCode === null) p.kill('SIGKILL');
}

function metrics(env: SandboxEnv): Promise<string> {
  return kubectl(env, ['get', '--raw', '/metrics']);
}

async function runRow(nodes: number): Promise<Row> {
  const pods = PODS || nodes * PER_NODE;
  say(`${nodes} nodes, ${pods} pods: bringing up the private control plane`);
  await sandbox(['down']);
  await sandbox(['up', '--nodes', String(nodes)], { INPLACE_SCALE_STAGES: STAGES, INPLACE_SCALE_AUDIT: '1' });
  const env = await sandboxEnv();
  const kc = new KubeConfig();
  kc.loadFromFile(env.KUBECONFIG);
  await installAgent(env);
  const agentPodList = await agentPods(kc, nodes);
  const agentsDir = path.join(env.INPLACE_SCALE_DIR, 'agents');
  const files = await agentKubeconfigs(kc, env, agentPodList, agentsDir);
  const coordFile = files.get(COORDINATOR_NODE)!;
  // The coordinator's kubeconfig stays out of the node agents' directory.
  const coordKubeconfig = path.join(env.INPLACE_SCALE_DIR, 'coordinator.kubeconfig');
  renameSync(coordFile, coordKubeconfig);
  say(`${files.size - 1} node agents' tokens; creating the StatefulSet of ${pods}`);
  await createWorkload(kc, pods, Math.ceil(pods / nodes));
  await waitWorkload(kc, pods, 600_000);
  say('workload running; starting the node agents');
  const t00 = Date.now();
  const nodeProc = await startUntil([path.join(HERE, 'node-agents.js'), agentsDir, String(PULL_MS)], 'ready');
  const agentsStartMs = Date.now() - t00;
  const coordProc = await startUntil([path.join(HERE, 'coordinator.js'), coordKubeconfig, COORDINATOR_NODE, path.join(env.INPLACE_SCALE_DIR, 'coordinator-state')], 'leading');
  const custom = kc.makeApiClient(CustomObjectsApi);
  const apps = kc.makeApiClient(AppsV1Api);
  try {
    await custom.createNamespacedCustomObject({
      group: IPR_GROUP,
      version: IPR_VERSION,
      plural: IPR_PLURAL,
      namespace: NS,
      body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name: APP }, spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: APP }, maxUnavailable: MAX_UNAVAILABLE, prewarm: false } },
    });
    const get = async () => (await custom.getNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: NS, name: APP })) as InPlaceRollout;
    while ((await get()).status?.phase !== 'Succeeded') await sleep(500);
    await sleep(3000);
    const coordinatorStartRss = rssMiB(coordProc.pid!).now;
    const pids: Record<string, number> = {
      apiserver: Number(env.INPLACE_SCALE_APISERVER_PID),
      etcd: Number(env.INPLACE_SCALE_ETCD_PID),
      kwok: Number(env.INPLACE_SCALE_KWOK_PID),
      'controller-manager': Number(env.INPLACE_SCALE_CONTROLLER_MANAGER_PID),
      scheduler: Number(env.INPLACE_SCALE_SCHEDULER_PID),
      coordinator: coordProc.pid!,
      'node agents': nodeProc.pid!,
    };
    const cpu0 = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuSeconds(p)]));
    const m0 = await metrics(env);
    const oldRev = (await apps.readNamespacedStatefulSet({ namespace: NS, name: APP })).status?.updateRevision;
    say(`changing the template (the app image; revision ${oldRev} before)`);
    const t0 = Date.now();
    await apps.patchNamespacedStatefulSet({ namespace: NS, name: APP, body: { spec: { template: { spec: { containers: [{ name: 'app', image: IMAGES.appNext }] } } } } }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch));
    let newRev = oldRev;
    while (newRev === oldRev) {
      await sleep(200);
      newRev = (await apps.readNamespacedStatefulSet({ namespace: NS, name: APP })).status?.updateRevision;
    }
    let last = '';
    let peakInFlight = 0;
    for (;;) {
      const r = await get();
      const s = r.status ?? {};
      peakInFlight = Math.max(peakInFlight, s.podsInFlight?.length ?? 0);
      const line = `${s.phase} updated ${s.updatedReplicas ?? 0}/${s.replicas ?? 0} in flight ${s.podsInFlight?.length ?? 0} (revision ${s.updateRevision})`;
      if (line !== last) say(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${line}`);
      last = line;
      if (s.phase === 'Succeeded' && s.updatedReplicas === pods && s.updateRevision === newRev) break;
      if (s.phase === 'Failed' || s.phase === 'Paused') throw new Error(`rollout ${s.phase}: ${s.message}`);
      if (Date.now() - t0 > ROLLOUT_TIMEOUT_MS) throw new Error(`rollout not done after ${ROLLOUT_TIMEOUT_MS / 1000} s: ${line}`);
      await sleep(500);
    }
    const t1 = Date.now();
    const cpu1 = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuSeconds(p)]));
    const m1 = await metrics(env);
    const coordinatorRss = rssMiB(coordProc.pid!);
    const nodesRss = rssMiB(nodeProc.pid!);
    // The audit log is written in batches: let the last one land.
    await sleep(3000);
    const audit = path.join(env.INPLACE_SCALE_DIR, 'audit.log');
    const requests = auditRequests(audit, t0, t1, COORDINATOR_NODE);
    const agentWatches = new Map<string, number>();
    for (const x of auditRequests(audit, t00, t1, COORDINATOR_NODE)) {
      if (x.verb !== 'watch' || (x.actor !== 'coordinator' && x.actor !== 'node agents')) continue;
      const k = `${x.actor} ${x.resource}`;
      agentWatches.set(k, (agentWatches.get(k) ?? 0) + 1);
    }
    const budget = Math.min(pods, budgetOf(MAX_UNAVAILABLE, pods));
    await stopProcess(nodeProc);
    const stopped = /podLists (\d+)/.exec(nodeProc.lines.find((l) => l.startsWith('stopped')) ?? '');
    return {
      podLists: stopped ? Number(stopped[1]) : NaN,
      nodes,
      pods,
      budget,
      peakInFlight,
      waves: Math.ceil(pods / budget),
      ms: t1 - t0,
      requests,
      agentWatches,
      watchesOpen: metricSums(m1, 'apiserver_longrunning_requests', ['verb', 'resource']),
      watchEvents: delta(metricSums(m0, 'apiserver_watch_events_total', ['resource']), metricSums(m1, 'apiserver_watch_events_total', ['resource'])),
      listedObjects: delta(metricSums(m0, 'apiserver_cache_list_returned_objects_total', ['resource_prefix']), metricSums(m1, 'apiserver_cache_list_returned_objects_total', ['resource_prefix'])),
      cpu: Object.fromEntries(Object.keys(pids).map((k) => [k, cpu1[k] - cpu0[k]])),
      coordinatorRss,
      nodesRss,
      agentsStartMs,
      coordinatorStartRss,
    };
  } finally {
    await stopProcess(coordProc);
    await stopProcess(nodeProc);
  }
}

const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);

/** Reads (read true) or stored writes (read false) of one sender (all when undefined). */
function tally(rs: Request[], actor: Actor | undefined, read: boolean): number {
  return rs.filter((r) => (actor === undefined || r.actor === actor) && (read ? isRead(r.verb) : isStoredWrite(r))).length;
}

function report(rows: Row[]): void {
  const out: string[] = [];
  out.push(`## bench:scale: ${PODS ? `${PODS} pods on every row` : `${PER_NODE} pods a node`}, maxUnavailable ${MAX_UNAVAILABLE}, simulated pull ${PULL_MS} ms (${new Date().toISOString()})`, '');
  out.push('| nodes | pods | time s | waves (budget) | s a wave | coordinator writes/pod | coordinator reads/pod | node agents writes/pod | node agents reads/pod | agent access reviews/pod | kwok writes/pod | all writes/pod | watches the agents started | watch events sent/pod | coordinator RSS MiB (peak) | coordinator CPU s | node agents RSS MiB a node | node agents CPU s a node | apiserver CPU s | etcd CPU s | kwok CPU s |');
  out.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const p = r.pods;
    const writesAll = r.requests.filter(isStoredWrite).length;
    const reviews = r.requests.filter((x) => isReview(x) && (x.actor === 'coordinator' || x.actor === 'node agents')).length;
    const agentWatches = [...r.agentWatches.values()].reduce((a, v) => a + v, 0);
    const events = [...r.watchEvents.values()].reduce((a, b) => a + b, 0);
    out.push(
      `| ${r.nodes} | ${p} | ${f1(r.ms / 1000)} | ${r.waves} (${r.budget}) | ${f2(r.ms / 1000 / r.waves)} | ${f2(tally(r.requests, 'coordinator', false) / p)} | ${f2(tally(r.requests, 'coordinator', true) / p)} | ${f2(tally(r.requests, 'node agents', false) / p)} | ${f2(tally(r.requests, 'node agents', true) / p)} | ${f2(reviews / p)} | ${f2(tally(r.requests, 'kwok', false) / p)} | ${f2(writesAll / p)} | ${agentWatches} | ${f1(events / p)} | ${f1(r.coordinatorRss.now)} (${f1(r.coordinatorRss.peak)}) | ${f1(r.cpu.coordinator)} | ${f2(r.nodesRss.now / r.nodes)} | ${f2(r.cpu['node agents'] / r.nodes)} | ${f1(r.cpu.apiserver)} | ${f1(r.cpu.etcd)} | ${f1(r.cpu.kwok)} |`,
    );
  }
  out.push('');
  for (const r of rows) {
    out.push(`### ${r.nodes} nodes: requests a pod by who, verb and resource (rollout window, audit log)`, '');
    out.push('| who | verb | resource | requests | a pod |', '|---|---|---|---|---|');
    const by = new Map<string, number>();
    for (const x of r.requests) by.set(`${x.actor}|${x.verb}|${x.resource}`, (by.get(`${x.actor}|${x.verb}|${x.resource}`) ?? 0) + 1);
    for (const [k, v] of [...by].sort((a, b) => b[1] - a[1])) {
      if (v / r.pods < 0.005) continue;
      const [who, verb, res] = k.split('|');
      out.push(`| ${who} | ${verb} | ${res} | ${v} | ${f2(v / r.pods)} |`);
    }
    out.push('');
    const open = [...r.watchesOpen].filter(([k]) => k.startsWith('WATCH ')).reduce((a, [, v]) => a + v, 0);
    out.push(`Watches the agents started, from their start to the rollout's end (audit log): ${[...r.agentWatches].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')}. Watches open at the API server at the end, every client (apiserver_longrunning_requests): ${open}.`);
    out.push(`Watch events sent in the window, a pod (apiserver_watch_events_total): ${[...r.watchEvents].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([k, v]) => `${k} ${f1(v / r.pods)}`).join(', ')}.`);
    out.push(`Objects returned by LISTs from the watch cache in the window (apiserver_cache_list_returned_objects_total): ${[...r.listedObjects].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}.`);
    out.push(`CPU s in the window: ${Object.entries(r.cpu).map(([k, v]) => `${k} ${f1(v)}`).join(', ')}. Node agents: ${r.nodes} nodes started in ${f1(r.agentsStartMs / 1000)} s, process RSS ${f1(r.nodesRss.now)} MiB (peak ${f1(r.nodesRss.peak)}). Coordinator RSS before the change: ${f1(r.coordinatorStartRss)} MiB. Most pods in flight at once (status read every 0.5 s): ${r.peakInFlight} of a budget of ${r.budget}. The nodes' runtimes were asked for their pod list ${r.podLists} times from the node side's start to its stop (${f1(r.podLists / r.pods)} a pod; a CRI ListPodSandbox each on a real node).`, '');
  }
  if (rows.length > 1) {
    const a = rows[0];
    out.push(`### Growth from ${a.nodes} nodes`, '', '| nodes | x nodes | x time a wave | x coordinator writes/pod | x coordinator reads/pod | x node agents reads/pod | x coordinator RSS | x coordinator CPU | x apiserver CPU | x watch events/pod |', '|---|---|---|---|---|---|---|---|---|---|');
    const ev = (r: Row) => [...r.watchEvents.values()].reduce((x, y) => x + y, 0) / r.pods;
    const ratio = (x: number, y: number) => (y > 0 ? f2(x / y) : '-');
    for (const r of rows.slice(1)) {
      out.push(
        `| ${r.nodes} | ${f2(r.nodes / a.nodes)} | ${ratio(r.ms / r.waves, a.ms / a.waves)} | ${ratio(tally(r.requests, 'coordinator', false) / r.pods, tally(a.requests, 'coordinator', false) / a.pods)} | ${ratio(tally(r.requests, 'coordinator', true) / r.pods, tally(a.requests, 'coordinator', true) / a.pods)} | ${ratio(tally(r.requests, 'node agents', true) / r.pods, tally(a.requests, 'node agents', true) / a.pods)} | ${ratio(r.coordinatorRss.now, a.coordinatorRss.now)} | ${ratio(r.cpu.coordinator, a.cpu.coordinator)} | ${ratio(r.cpu.apiserver, a.cpu.apiserver)} | ${ratio(ev(r), ev(a))} |`,
      );
    }
  }
  process.stdout.write(out.join('\n') + '\n');
}

const rows: Row[] = [];
try {
  for (const n of NODES) {
    rows.push(await runRow(n));
    report(rows.slice(-1));
  }
  if (rows.length > 1) report(rows);
} finally {
  if (!KEEP) await sandbox(['down']).catch(() => undefined);
}
