// The node side of the scale harness (issue 42): the agent's own node components for many KWOK nodes in ONE
// process, each node wired as src/daemon/daemon.ts wires a real agent in Kubernetes mode (its own kubeconfig and
// node-bound token, Kubernetes mode with the watch of its pods, an Engine with its own journal, the pull service,
// the ContainerRestart controller), over a SIMULATED runtime (sim-runtime.ts). Not started per node: the gRPC API,
// the metrics endpoint, the pre-warm list, the fleet pre-warm, the rollout coordinator (run.ts starts that one
// apart, as the elected agent) and the SidecarSet controller; their standing watches are not in the figures.
//
//   node dist/bench/scale/node-agents.js AGENTS_DIR PULL_MS
// AGENTS_DIR holds NODE.kubeconfig for each node to play; each node's state goes to AGENTS_DIR/state/NODE. Prints
// `ready N` once every node's pod watch has its first list and its controller runs; SIGTERM stops them all and
// prints `stopped N pulls P podLists L` (the simulated runtimes' pulls and pod lists, all nodes together).
import { mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { systemClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { daemonCommand, daemonOptions } from '../../src/daemon/options.js';
import { agentIdentity } from '../../src/daemon/agent-identity.js';
import { Engine } from '../../src/engine/engine.js';
import { Journal } from '../../src/engine/journal.js';
import { ImagePullService } from '../../src/pull/pull-service.js';
import { kubeConfigFrom, limitRequests, createKubeMode, startContainerRestarts } from '../../src/daemon/kube-wiring.js';
import type { KubeMode } from '../../src/kube/kube-mode.js';
import type { ContainerRestartController } from '../../src/controllers/container-restart/controller.js';
import { SimRuntime } from './sim-runtime.js';

const [dir, pullMsArg] = process.argv.slice(2);
if (!dir) throw new Error('usage: node-agents.js AGENTS_DIR [PULL_MS]');
const PULL_MS = Number(pullMsArg ?? '500');
const clock = systemClock;
const log = createLogger(process.env.SCALE_AGENT_LOG_LEVEL ?? 'warn');

interface SimNode {
  name: string;
  kube: KubeMode;
  engine: Engine;
  pulls: ImagePullService;
  restarts: ContainerRestartController;
  runtime: SimRuntime;
}

async function startNode(file: string): Promise<SimNode> {
  const name = path.basename(file, '.kubeconfig');
  const stateDir = path.join(dir, 'state', name);
  mkdirSync(stateDir, { recursive: true });
  const opts = daemonOptions(daemonCommand('0').exitOverride().parse(['--node-name', name, '--state-dir', stateDir, '--kubeconfig', file], { from: 'user' }));
  const kc = limitRequests(kubeConfigFrom({ kind: 'file', file }), opts.kubeRequestTimeoutMs);
  const nlog = log.child({ node: name });
  // The runtime reads the node's pods through the node's own watch (made next).
  const seen: { kube?: KubeMode } = {};
  const runtime = new SimRuntime(name, { list: () => seen.kube?.pods.list() ?? [] }, clock, PULL_MS);
  const kube = (seen.kube = createKubeMode(kc, name, runtime, clock, nlog, { proxyMetricsUrl: '', settleMs: opts.drainSettleMs }));
  await kube.start();
  const agentId = await agentIdentity(stateDir);
  const pulls = new ImagePullService({ runtime, maxParallel: opts.maxParallelPulls, retries: opts.pullRetries, stallTimeoutMs: opts.pullStallTimeoutMs, timeoutMs: opts.pullTimeoutMs, logger: nlog, clock });
  const engine = new Engine({
    runtime,
    agentId,
    puller: pulls,
    journal: new Journal(stateDir),
    clock,
    log: nlog,
    retention: opts.retention,
    strategies: [kube.strategy],
    kubeletPods: true,
    maxParallel: opts.maxParallelOperations,
    onFatal: (err) => {
      nlog.error('journal failed', { error: String(err) });
      process.exit(1);
    },
  });
  await engine.start();
  const restarts = await startContainerRestarts(kube, agentId, opts, engine, runtime, clock, nlog);
  return { name, kube, engine, pulls, restarts, runtime };
}

const files = readdirSync(dir)
  .filter((f) => f.endsWith('.kubeconfig'))
  .map((f) => path.join(dir, f));
const nodes: SimNode[] = [];
// A few at a time: each node's first list is a request the API server answers alongside the others'.
for (let i = 0; i < files.length; i += 20) nodes.push(...(await Promise.all(files.slice(i, i + 20).map(startNode))));
process.stdout.write(`ready ${nodes.length}\n`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await Promise.all(nodes.map(async (n) => {
    await n.restarts.stop();
    await n.engine.drain(5000);
    await n.kube.stop();
    n.pulls.stop();
  }));
  const pulls = nodes.reduce((a, n) => a + n.runtime.pulls, 0);
  const lists = nodes.reduce((a, n) => a + n.runtime.podLists, 0);
  process.stdout.write(`stopped ${nodes.length} pulls ${pulls} podLists ${lists}\n`);
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
