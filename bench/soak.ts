// `npm run bench:soak`: many restarts through one agent on the sandbox's containerd, to see what a long run
// leaves behind: throughput, latency, failures, the agent's RSS and open fds over the run, and leftovers
// (exited containers, mounts, snapshots, journal files past retention). Then a burst of concurrent requests
// against a fresh agent, for its peak RSS. Needs the sandbox up (`sudo scripts/sandbox up`).
//
// Size (flag, or environment variable):
//   --restarts N   SOAK_RESTARTS   restarts in all (default 1000; 0 runs the burst alone)
//   --pods N       SOAK_PODS       pods they are spread over (default 20)
//   --parallel N   SOAK_PARALLEL   restarts in flight at once (default 8)
//   --burst N      SOAK_BURST      concurrent requests of the burst, 0 to skip it (default 200)
//   --retention N  SOAK_RETENTION  the agent's --retention, so pruning is exercised (default 100)
//   --min-ready D  SOAK_MIN_READY  the agent's --min-ready (default 1s, its own default: a replacement is
//                                  stopped only once it has settled, as in real use)
//   --kubeconfig F --node-name N   SOAK_KUBECONFIG, SOAK_NODE_NAME: the agents run in Kubernetes mode for
//                                  node N (run against that node's runtime: INPLACE_SANDBOX_DIR=/tmp/inplace-kube
//                                  for the kube sandbox's node)
// A quick run: `npm run bench:soak -- --restarts 40 --pods 4 --burst 20`.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AgentClient } from '../src/api/client.js';
import { AgentError } from '../src/errors.js';
import { isTerminal } from '../src/engine/operation.js';
import type { OperationView as Operation } from '../src/api/convert.js';
import { CriRuntime } from '../src/runtime/cri/cri-runtime.js';
import { CRI_NAMESPACE } from '../src/runtime/types.js';
import { CriPodFixture } from '../test/testbed/cri-pods.js';
import type { TestPod } from '../test/testbed/pod-fixture.js';
import { sandboxEnv } from '../test/testbed/sandbox-env.js';
import { agentNodeFlags } from './agent-launch.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const env = sandboxEnv();

const { values: flags } = parseArgs({
  options: {
    restarts: { type: 'string' },
    pods: { type: 'string' },
    parallel: { type: 'string' },
    burst: { type: 'string' },
    retention: { type: 'string' },
    'min-ready': { type: 'string' },
    kubeconfig: { type: 'string' },
    'node-name': { type: 'string' },
  },
});
function size(flag: keyof typeof flags, envName: string, dflt: number, min: number): number {
  const raw = flags[flag] ?? process.env[envName] ?? String(dflt);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} / ${envName} must be a whole number >= ${min}, got "${String(raw)}"`);
  return n;
}
const RESTARTS = size('restarts', 'SOAK_RESTARTS', 1000, 0);
const PODS = size('pods', 'SOAK_PODS', 20, 1);
const PARALLEL = size('parallel', 'SOAK_PARALLEL', 8, 1);
const BURST = size('burst', 'SOAK_BURST', 200, 0);
const RETENTION = size('retention', 'SOAK_RETENTION', 100, 1);
const MIN_READY = String(flags['min-ready'] ?? process.env.SOAK_MIN_READY ?? '1s');
// Kubernetes mode: the agents get this kubeconfig and node name (the kube client loaded, this node's pods
// watched, the fleet pre-warm on), so its memory is measured too.
const KUBECONFIG = flags.kubeconfig ?? process.env.SOAK_KUBECONFIG;
const NODE_NAME = flags['node-name'] ?? process.env.SOAK_NODE_NAME;
if (KUBECONFIG && !NODE_NAME) throw new Error('--kubeconfig needs --node-name (the node whose runtime the sandbox is)');

const now = () => Number(process.hrtime.bigint()) / 1e6;
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
const fmtMs = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return kb / 1024;
}
const openFds = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;
/** Host mounts under the sandbox's directory (container root filesystems, sandbox shm). */
const sandboxMounts = () => fs.readFileSync('/proc/mounts', 'utf8').split('\n').filter((l) => l.includes(env.dir)).length;
/** containerd snapshots in the CRI namespace. */
function snapshots(): number {
  const out = execFileSync('ctr', ['--address', env.containerdAddress, '-n', CRI_NAMESPACE, 'snapshots', 'ls'], { encoding: 'utf8' });
  return out.trim().split('\n').length - 1;
}

interface Agent {
  child: ChildProcess;
  client: AgentClient;
  stateDir: string;
  logFile: string;
  stop(): Promise<void>;
}

async function startAgent(work: string, name: string, retention = RETENTION): Promise<Agent> {
  const sock = path.join(work, `${name}.sock`);
  const stateDir = path.join(work, `${name}-state`);
  const logFile = path.join(work, `${name}.log`);
  const log = fs.openSync(logFile, 'w');
  const child = spawn(
    process.execPath,
    [
      ...agentNodeFlags(),
      path.join(root, 'dist/src/daemon/main.js'),
      ...['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--listen', `unix://${sock}`, '--state-dir', stateDir],
      ...['--log-level', 'warn', '--min-ready', MIN_READY, '--grace', '10s', '--retention', String(retention)],
      // The soak's pods are sandboxes no kubelet made: Kubernetes mode refuses them without the opt-in.
      ...(KUBECONFIG ? ['--kubeconfig', KUBECONFIG, '--node-name', NODE_NAME ?? '', '--container-restart-standalone-pods'] : []),
    ],
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  const client = new AgentClient(`unix://${sock}`, 120_000);
  for (let i = 0; ; i++) {
    try {
      await client.listOperations();
      break;
    } catch (err) {
      if (i > 200 || child.exitCode !== null) throw new Error(`agent did not start: ${String(err)}\n${fs.readFileSync(logFile, 'utf8')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const exited = new Promise((r) => child.once('exit', r));
  return {
    child,
    client,
    stateDir,
    logFile,
    stop: async () => {
      client.close();
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Restarts app of pod and follows it to the end; resolves with the final record. */
async function restart(c: AgentClient, pod: TestPod): Promise<Operation> {
  const op = await c.restart({ pod: pod.name, containers: ['app'], images: {} });
  let last = op;
  for await (const o of c.watchOperation(op.id)) last = o;
  if (!isTerminal(last.state)) throw new Error(`operation ${op.id}: watch ended in ${last.state}`);
  return last;
}

interface Sample {
  done: number;
  rss: number;
  fds: number;
}

async function soak(agent: Agent, pods: TestPod[]): Promise<{ latencies: number[]; failures: string[]; samples: Sample[]; wallMs: number }> {
  const pid = agent.child.pid!;
  const latencies: number[] = [];
  const failures: string[] = [];
  const samples: Sample[] = [{ done: 0, rss: rssMiB(pid), fds: openFds(pid) }];
  const every = Math.max(1, Math.floor(RESTARTS / 10));
  let next = 0;
  let done = 0;
  const t0 = now();
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= RESTARTS) return;
      const t = now();
      try {
        const op = await restart(agent.client, pods[i % pods.length]);
        if (op.state !== 'Succeeded') failures.push(`${op.id} ${op.state}: ${op.error ?? op.containers[0]?.error ?? ''}`);
      } catch (err) {
        failures.push(`restart #${i}: ${String(err)}`);
      }
      latencies.push(now() - t);
      done++;
      if (done % every === 0 || done === RESTARTS) samples.push({ done, rss: rssMiB(pid), fds: openFds(pid) });
      if (done % Math.max(1, Math.floor(RESTARTS / 20)) === 0) process.stderr.write(`  soak: ${done}/${RESTARTS}\r`);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  process.stderr.write('\n');
  return { latencies, failures, samples, wallMs: now() - t0 };
}

// The burst: every request is sent at once. The agent takes at most 64 open calls from one caller and refuses
// the rest with ResourceExhausted; a refused request is sent again after a short pause, as a client should. All
// of them are then queued in the agent at once (it runs --max-parallel-operations of them); their ends are
// followed with one list call every 500 ms rather than 200 watch streams, which the same bound would refuse.
async function burst(agent: Agent, pods: TestPod[]): Promise<{ peak: number; before: number; failures: number; refused: number; peakQueued: number; wallMs: number }> {
  const pid = agent.child.pid!;
  const before = rssMiB(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 20);
  const t0 = now();
  let refused = 0;
  const submit = async (pod: TestPod): Promise<string> => {
    for (;;) {
      try {
        return (await agent.client.restart({ pod: pod.name, containers: ['app'], images: {} })).id;
      } catch (err) {
        if (!AgentError.is(err, 'ResourceExhausted')) throw err;
        refused++;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 150));
      }
    }
  };
  process.stderr.write(`  burst: sending ${BURST} restart requests at once\n`);
  const ids = new Set(await Promise.all(Array.from({ length: BURST }, (_, i) => submit(pods[i % pods.length]))));
  let peakQueued = 0;
  let ops = await agent.client.listOperations();
  for (;;) {
    const mine = ops.filter((o) => ids.has(o.id));
    peakQueued = Math.max(peakQueued, mine.filter((o) => !isTerminal(o.state)).length);
    process.stderr.write(`\r  burst: ${ids.size} accepted (${refused} refused sends retried), ${mine.filter((o) => isTerminal(o.state)).length} ended`);
    if (mine.length === ids.size && mine.every((o) => isTerminal(o.state))) break;
    await new Promise((r) => setTimeout(r, 500));
    ops = await agent.client.listOperations();
  }
  const wallMs = now() - t0;
  clearInterval(sampler);
  peak = Math.max(peak, rssMiB(pid));
  const failures = ops.filter((o) => ids.has(o.id) && o.state !== 'Succeeded').length;
  return { peak, before, failures, refused, peakQueued, wallMs };
}

async function main(): Promise<void> {
  const rt = new CriRuntime(env.criEndpoint);
  try {
    await rt.version();
  } catch (err) {
    throw new Error(`the sandbox containerd is not reachable (${String(err)}); run \`sudo scripts/sandbox up\` first`);
  }
  const fixture = new CriPodFixture(env.criEndpoint);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-soak-'));
  const pods: TestPod[] = [];
  const agents: Agent[] = [];
  const out: string[] = [];
  const say = (line: string) => {
    out.push(line);
    process.stdout.write(line + '\n');
  };
  try {
    for (let i = 0; i < PODS; i++) {
      pods.push(
        await fixture.create({
          name: `soak-${i}`,
          namespace: 'bench',
          containers: [
            { name: 'app', image: env.images.appV1 },
            { name: 'sidecar', image: env.images.appV1 },
          ],
        }),
      );
    }
    // --restarts 0: the burst alone.
    if (RESTARTS > 0) {
      const agent = await startAgent(work, 'soak');
      agents.push(agent);
      const idle = { rss: rssMiB(agent.child.pid!), fds: openFds(agent.child.pid!) };
      // One restart per pod first, so the baseline includes every pod's replacement having been made once.
      await Promise.all(pods.map((p) => restart(agent.client, p)));
      const base = { mounts: sandboxMounts(), snapshots: snapshots() };

      say(`soak: containerd ${(await rt.version()).version}, ${RESTARTS} restarts over ${PODS} two-container pods, ${PARALLEL} at a time, min-ready ${MIN_READY}, retention ${RETENTION}, ${os.cpus().length} CPUs (shared)`);
      const r = await soak(agent, pods);
      const lat = [...r.latencies].sort((a, b) => a - b);
      say(`  throughput ${((RESTARTS / r.wallMs) * 1000).toFixed(2)} restarts/s (${fmtMs(r.wallMs)} in all)`);
      say(`  latency (request -> operation ended) p50 ${fmtMs(pct(lat, 50))}, p99 ${fmtMs(pct(lat, 99))}, max ${fmtMs(lat[lat.length - 1])}`);
      say(`  failures ${r.failures.length} (target 0)${r.failures.length ? ': ' + r.failures.slice(0, 5).join('; ') : ''}`);
      const mid = r.samples.reduce((best, s) => (Math.abs(s.done - RESTARTS / 2) < Math.abs(best.done - RESTARTS / 2) ? s : best));
      const [start, end] = [r.samples[0], r.samples[r.samples.length - 1]];
      say(`  agent RSS  idle ${idle.rss.toFixed(1)} MiB; start ${start.rss.toFixed(1)}, middle ${mid.rss.toFixed(1)}, end ${end.rss.toFixed(1)} MiB`);
      say(`  agent fds  idle ${idle.fds}; start ${start.fds}, middle ${mid.fds}, end ${end.fds}`);
      say(`  every ${Math.max(1, Math.floor(RESTARTS / 10))}: RSS ${r.samples.map((s) => s.rss.toFixed(0)).join(' ')} MiB; fds ${r.samples.map((s) => s.fds).join(' ')}`);
      const secondHalf = r.samples.filter((s) => s.done >= RESTARTS / 2);
      const rssRise = end.rss - Math.min(...secondHalf.map((s) => s.rss));
      const fdRise = end.fds - start.fds;
      say(`  trend: fds end - start ${fdRise >= 0 ? '+' : ''}${fdRise}; RSS end - lowest of the second half ${rssRise >= 0 ? '+' : ''}${rssRise.toFixed(1)} MiB`);

      // Leftovers, with the agent idle again.
      const containers = (await Promise.all(pods.map((p) => rt.listContainers({ podId: p.podId })))).flat();
      const exited = containers.filter((c) => c.state !== 'running');
      const running = containers.length - exited.length;
      const journalDir = path.join(agent.stateDir, 'operations');
      const journal = fs.readdirSync(journalDir);
      const records = journal.filter((f) => f.endsWith('.json')).length;
      const temps = journal.length - records;
      const mountsNow = sandboxMounts();
      const snapsNow = snapshots();
      say(`  leftovers: exited containers not removed ${exited.length} (running ${running} of ${PODS * 2})`);
      say(`             mounts under the sandbox ${mountsNow} (baseline ${base.mounts}), snapshots ${snapsNow} (baseline ${base.snapshots})`);
      say(`             journal records ${records} (retention ${RETENTION}), other files in the journal ${temps}`);
      await agent.stop();
    }

    if (BURST > 0) {
      // Retention at least the burst's size: every operation of it stays listed until it is counted.
      const fresh = await startAgent(work, 'burst', Math.max(RETENTION, BURST));
      agents.push(fresh);
      const b = await burst(fresh, pods);
      say(`burst: ${BURST} concurrent restart requests over ${PODS} pods on a fresh agent: peak RSS ${b.peak.toFixed(1)} MiB (target <= 160, ${b.peak <= 160 ? 'met' : 'MISSED'}), ` +
        `before ${b.before.toFixed(1)} MiB; ${b.peakQueued} queued at once at the peak, ${b.refused} sends refused at the 64-call bound and sent again; ` +
        `${b.failures} failed; all ended in ${fmtMs(b.wallMs)}`);
      await fresh.stop();
    }
    fs.writeFileSync(path.join(work, 'result.txt'), out.join('\n') + '\n');
  } catch (err) {
    for (const a of agents) process.stderr.write(`--- ${a.logFile} (tail)\n${fs.readFileSync(a.logFile, 'utf8').slice(-4000)}\n`);
    throw err;
  } finally {
    for (const a of agents) await a.stop().catch(() => undefined);
    for (const p of pods) await fixture.remove(p).catch(() => undefined);
    fixture.close();
    rt.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench:soak failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
