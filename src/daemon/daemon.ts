// The composition root: builds every component from the options, starts them in order (runtime, journal
// recovery, API, metrics) and stops them in reverse on shutdown. A setting or start-up step that fails
// rejects startDaemon with its error.
// First: a stand-in for the OpenTelemetry API, before prom-client is loaded (see without-otel.ts).
import './without-otel.js';
import { readFileSync } from 'node:fs';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { AgentError } from '../errors.js';
import { systemClock, type Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { startApiServer, type ApiServer } from '../api/server.js';
import { unixPath } from '../api/address.js';
import { prepareSocketPath } from '../api/socket-path.js';
import { Engine } from '../engine/engine.js';
import { Journal } from '../engine/journal.js';
import { isTerminal, type ContainerStep, type ContainerTarget, type Operation } from '../engine/operation.js';
import { connectRuntime } from '../runtime/detect.js';
import { withCallDeadlines } from '../runtime/call-deadline.js';
import type { Runtime } from '../runtime/runtime.js';
import { AccessControl } from './access.js';
import { observeOperations } from './operation-metrics.js';
import { agentIdentity } from './agent-identity.js';
import { recoveryMetrics } from './recovery-metrics.js';
import { Prewarmer } from './image-list-warmer.js';
import { startHttpEndpoints, type HttpEndpoints } from './http-endpoints.js';
import { RuntimeLiveness } from './runtime-liveness.js';
import type { DaemonOptions } from './options.js';
import { runtimeFactories } from './runtime-factories.js';
import { createPullService } from './pull-wiring.js';
import { agentKubeConfigSource, KUBECONFIG_LEFT_ASIDE, kubeModeNeedsNode } from '../k8s/kubeconfig-source.js';
import { KUBE_REQUEST_DEADLINE } from '../k8s/request-deadline.js';
import { drainBudgetMs } from './shutdown-bound.js';
import type { KubeMode } from '../kube/kube-mode.js';

/** The pull service and what comes with it (pull-wiring.ts). */
type PullWiring = Awaited<ReturnType<typeof createPullService>>;

/**
 * Fault injection for recovery and outage tests. With INPLACE_AGENT_FAULT_CRASH_AFTER_STEP=<step> the process
 * kills itself with SIGKILL right after journaling (or publishing) that container step, as a crash at the worst
 * moment would. With INPLACE_AGENT_FAULT_STOP_AFTER_STEP=<step> it stops itself (SIGSTOP) there instead, the
 * first time only, so that a test can break something (a runtime, say) before the next call and then resume
 * it with SIGCONT.
 */
function faultAfterStep(env: NodeJS.ProcessEnv, log: Logger): ((op: Operation, t: ContainerTarget, s: ContainerStep) => void) | undefined {
  const crash = env.INPLACE_AGENT_FAULT_CRASH_AFTER_STEP;
  let stop = env.INPLACE_AGENT_FAULT_STOP_AFTER_STEP;
  if (!crash && !stop) return undefined;
  log.warn('fault injection armed: the agent will signal itself after a container step', { crash, stop });
  return (_op, _t, s) => {
    if (s === crash) process.kill(process.pid, 'SIGKILL');
    if (s === stop) {
      stop = undefined;
      process.kill(process.pid, 'SIGSTOP');
    }
  };
}

/** The gid of a group given by name (from /etc/group) or number; a clear error when there is no such group. */
export function resolveGroup(group: string, groupFile = '/etc/group'): number {
  if (/^\d+$/.test(group)) return Number(group);
  const line = readFileSync(groupFile, 'utf8')
    .split('\n')
    .find((l) => l.split(':')[0] === group);
  const gid = line ? Number(line.split(':')[2]) : NaN;
  if (!Number.isInteger(gid)) throw new AgentError('InvalidArgument', `--socket-group: no group "${group}" in ${groupFile}`);
  return gid;
}

/** A started daemon. */
export interface Daemon {
  runtime: Runtime;
  engine: Engine;
  api: ApiServer;
  http?: HttpEndpoints;
  registry: Registry;
  /** Reads the --authz-file policy again (SIGHUP); an invalid file leaves the current one in force. */
  reloadAccess(): void;
  /** Kubernetes mode's parts, when a kubeconfig was found. */
  kube?: KubeMode;
  /** Drains operations to a safe point, flushes the journal and stops serving. */
  shutdown(): Promise<void>;
}

/** Starts the daemon; the journal is replayed before the API accepts calls. */
export async function startDaemon(opts: DaemonOptions, log: Logger, clock: Clock = systemClock): Promise<Daemon> {
  // Settings that can be wrong are checked before anything starts (recovery included).
  const socketGid = opts.socketGroup === undefined ? undefined : resolveGroup(opts.socketGroup);
  const access = new AccessControl(opts, log.child({ component: 'access' }));
  const kubeSource = agentKubeConfigSource({ kubeconfig: opts.kubeconfig });
  if (kubeSource && !opts.nodeName) throw new AgentError('InvalidArgument', kubeModeNeedsNode(kubeSource));
  if (!kubeSource && process.env.KUBECONFIG) log.info(KUBECONFIG_LEFT_ASIDE, { KUBECONFIG: process.env.KUBECONFIG });
  const k8s = kubeSource ? await import('./kube-wiring.js') : undefined;
  // Every API request with a deadline (its watches have theirs in the follower), so a wedged API server fails calls.
  const kc = kubeSource && k8s ? k8s.limitRequests(k8s.kubeConfigFrom(kubeSource), opts.kubeRequestTimeoutMs, () => log.warn(KUBE_REQUEST_DEADLINE, { server: kc?.getCurrentCluster()?.server, timeoutMs: opts.kubeRequestTimeoutMs })) : undefined;
  const socketPath = unixPath(opts.listen);
  if (socketPath) await prepareSocketPath(socketPath);
  const connected = await connectRuntime(opts, runtimeFactories());
  const v = connected.version;
  // Every later call with a deadline too, so a runtime that wedges after start-up fails calls instead of hanging them.
  const runtime = withCallDeadlines(connected.runtime, v.endpoint, opts.runtimeCallTimeoutMs, clock);
  log.info('connected to container runtime', { kind: v.kind, name: v.name, version: v.version, endpoint: v.endpoint });

  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  access.register(registry);
  const pullWiring = await createPullService(runtime, opts, registry, log, clock);
  const { pulls, parseKeyring } = pullWiring;
  const kubeMetrics = k8s && kc ? k8s.kubeMetrics(registry, kc.getCurrentCluster()?.server ?? '') : undefined;
  const kube = k8s && kc && opts.nodeName ? k8s.createKubeMode(kc, opts.nodeName, runtime, clock, log, { proxyMetricsUrl: opts.proxyMetricsUrl, settleMs: opts.drainSettleMs, standalonePods: opts.containerRestartStandalonePods, podEvents: opts.podEvents }, kubeMetrics?.drain) : undefined;
  // Operations resumed from the journal may need the API server: the pods are watched first.
  await kube?.start();
  // Read once: it names this agent in ContainerRestart claims and rollout Leases (Kubernetes mode, where it is
  // required), and it is put on the replacements it creates, so that its next start removes the one an operation
  // left before its first record was written (Engine.start). Without it outside Kubernetes (a state directory it
  // cannot write) those are only reported.
  const agentId = await agentIdentity(opts.stateDir).catch((err: unknown) => {
    if (kube) throw err;
    log.warn('cannot read or create this agent\'s identity in its state directory', { stateDir: opts.stateDir, error: String(err) });
    return undefined;
  });
  const engine = await startEngine(opts, runtime, agentId, pulls, kube, registry, clock, log);

  const clusterHolds = k8s && kc && kube ? k8s.watchClusterHolds(kc, log) : undefined;
  const api = await startApiServer(opts.listen, {
    socketGid,
    tls: access.tls,
    authz: access.authz(),
    engine,
    pulls,
    parseKeyring,
    runtimeKind: runtime.kind,
    runtimeCapabilities: runtime.capabilities,
    runtimeVersion: () => runtime.version(),
    clusterHolds,
    restartDefaults: { graceSeconds: opts.defaultGraceSeconds, minReadyMs: opts.defaultMinReadyMs, timeoutMs: opts.defaultTimeoutMs },
  });
  log.info('agent API listening', { address: api.address, ...access.describe() });

  const restarts = k8s && kube && agentId ? await k8s.startContainerRestarts(kube, agentId, opts, engine, runtime, clock, log, kubeMetrics?.restarts) : undefined;

  const prewarm = opts.prewarmFile
    ? new Prewarmer(pulls, { file: opts.prewarmFile, intervalMs: opts.prewarmIntervalMs, pin: opts.prewarmPin }, clock, log.child({ component: 'prewarm' }))
    : undefined;
  prewarm?.start();
  const fleet = k8s && kc && opts.nodeName ? k8s.startFleet(kc, opts.nodeName, opts, runtime, pulls, clock, log, kubeMetrics?.prewarm) : undefined;
  const rollouts = k8s && kc && opts.nodeName && agentId ? await k8s.startRollouts(kc, opts.nodeName, agentId, opts, clock, log) : undefined;
  const sidecarSets = k8s && kc && opts.nodeName && agentId ? k8s.startSidecarSets(kc, opts.nodeName, agentId, opts, clock, log) : undefined;

  const http = await startProbes(opts, registry, runtime, engine, clock, log);

  let stopping: Promise<void> | undefined;
  return {
    runtime,
    engine,
    api,
    http,
    registry,
    reloadAccess: () => access.reload(),
    kube,
    shutdown: () => (stopping ??= stopParts({ api, prewarm, fleet, rollouts, sidecarSets, restarts, engine, kube, kubeMetrics, pullWiring, http, runtime }, opts, clock, log)),
  };
}

/** The engine, started: the journal replayed, then in Kubernetes mode the pods' conditions reconciled in the background. */
async function startEngine(opts: DaemonOptions, runtime: Runtime, agentId: string | undefined, puller: PullWiring['pulls'], kube: KubeMode | undefined, registry: Registry, clock: Clock, log: Logger): Promise<Engine> {
  const engine = new Engine({
    runtime,
    agentId,
    puller,
    journal: new Journal(opts.stateDir),
    clock,
    log,
    retention: opts.retention,
    strategies: kube ? [kube.strategy] : [],
    kubeletPods: !!kube,
    maxParallel: opts.maxParallelOperations,
    ...recoveryMetrics(registry),
    afterStep: faultAfterStep(process.env, log),
    // Going on without a journal could leave a container stopped with no record of it: exit, and let the
    // supervisor's restart recover every operation from its last good record.
    onFatal: (err) => {
      log.error('exiting: the operation journal cannot be written', { error: String(err), stateDir: opts.stateDir });
      process.exit(1);
    },
  });
  observeOperations(engine, registry);
  await engine.start();
  if (kube) {
    // Never over an operation begun since (engine.list() read again for each pod).
    const unfinished = (pod: string) => engine.list().some((o) => o.podName === pod && !isTerminal(o.state));
    kube.strategy.reconcile(engine.list(), unfinished).catch((err: unknown) => log.warn('reconciling pod conditions failed', { error: String(err) }));
  }
  return engine;
}

/** The metrics and probe endpoints on --metrics-addr, when it is set. */
async function startProbes(opts: DaemonOptions, registry: Registry, runtime: Runtime, engine: Engine, clock: Clock, log: Logger): Promise<HttpEndpoints | undefined> {
  if (!opts.metricsAddr) return undefined;
  const liveness = new RuntimeLiveness(() => runtime.version(), opts.livenessRuntimeTimeoutMs, clock);
  const http = await startHttpEndpoints(opts.metricsAddr, registry, {
    live: () => liveness.probe(),
    ready: async () => {
      if (engine.draining) return 'shutting down';
      try {
        await runtime.version();
        liveness.sawRuntime();
        return undefined;
      } catch (err) {
        return `runtime unreachable: ${String(err)}`;
      }
    },
  });
  log.info('metrics and probes listening', { address: http.address });
  return http;
}

/** What shutdown stops. */
interface Parts {
  api: ApiServer;
  prewarm?: { stop(): Promise<void> };
  fleet?: { stop(): Promise<void> };
  rollouts?: { stop(): Promise<void> };
  sidecarSets?: { stop(): Promise<void> };
  restarts?: { stop(): Promise<void> };
  engine: Engine;
  kube?: KubeMode;
  kubeMetrics?: { close(): void };
  pullWiring: PullWiring;
  http?: HttpEndpoints;
  runtime: Runtime;
}

/** Drains the operations to a safe point within --drain-timeout and stops every part, the controllers first. */
async function stopParts(p: Parts, opts: DaemonOptions, clock: Clock, log: Logger): Promise<void> {
  log.info('draining: no new operations; running ones stop at a safe point');
  const began = clock.now();
  p.api.health.setStatus('', 'NOT_SERVING');
  await p.prewarm?.stop();
  await p.fleet?.stop();
  await p.rollouts?.stop();
  await p.sidecarSets?.stop();
  await p.restarts?.stop();
  // The operations get what is left of the drain timeout (main.ts exits at its end whatever still waits).
  const left = await p.engine.drain(drainBudgetMs(opts.drainTimeoutMs, clock.now() - began));
  if (left.length > 0) log.warn('drain timed out: exiting with operations still running; they resume at the next start', { operations: left, drainTimeoutMs: opts.drainTimeoutMs });
  // Operations are drained: what is left are reads and watch streams, cut after a short grace.
  await p.api.stop(1000);
  await p.kube?.stop();
  p.kubeMetrics?.close();
  p.pullWiring.close();
  await p.http?.close();
  p.runtime.close();
  log.info('stopped');
}
