// The composition root: builds every component from the options, starts them in order (runtime, journal
// recovery, API, metrics) and stops them in reverse on shutdown. A setting or start-up step that fails
// rejects startDaemon with its error.
import { readFileSync } from 'node:fs';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { AgentError } from '../errors.js';
import { systemClock, type Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { startApiServer, type ApiServer } from '../api/server.js';
import { Engine } from '../engine/engine.js';
import { Journal } from '../engine/journal.js';
import type { ContainerStep, ContainerTarget, Operation } from '../engine/operation.js';
import { detectRuntime } from '../runtime/detect.js';
import type { Runtime } from '../runtime/runtime.js';
import { observeOperations } from './operation-metrics.js';
import { Prewarmer } from './prewarm.js';
import { startHttpEndpoints, type HttpEndpoints } from './http-endpoints.js';
import { RuntimeLiveness } from './runtime-liveness.js';
import type { DaemonOptions } from './options.js';
import { runtimeFactories } from './runtime-factories.js';
import { createPullService } from './pull-wiring.js';

/**
 * Fault injection for recovery tests: with INPLACE_AGENT_FAULT_CRASH_AFTER_STEP=<step> the process kills
 * itself with SIGKILL right after journaling that container step, as a crash at the worst moment would.
 */
function crashAfterStep(step: string | undefined, log: Logger): ((op: Operation, t: ContainerTarget, s: ContainerStep) => void) | undefined {
  if (!step) return undefined;
  log.warn('fault injection armed: the agent will SIGKILL itself after a journaled step', { step });
  return (_op, _t, s) => {
    if (s === step) process.kill(process.pid, 'SIGKILL');
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
  /** Drains operations to a safe point, flushes the journal and stops serving. */
  shutdown(): Promise<void>;
}

/** Starts the daemon; the journal is replayed before the API accepts calls. */
export async function startDaemon(opts: DaemonOptions, log: Logger, clock: Clock = systemClock): Promise<Daemon> {
  // Settings that can be wrong are checked before anything starts (recovery included).
  const socketGid = opts.socketGroup === undefined ? undefined : resolveGroup(opts.socketGroup);
  const runtime = await detectRuntime(opts, runtimeFactories());
  const v = await runtime.version();
  log.info('connected to container runtime', { kind: v.kind, name: v.name, version: v.version, endpoint: v.endpoint });

  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const pullWiring = await createPullService(runtime, opts, registry, log, clock);
  const { pulls, parseKeyring } = pullWiring;
  const engine = new Engine({
    runtime,
    puller: pulls,
    journal: new Journal(opts.stateDir),
    clock,
    log,
    retention: opts.retention,
    afterStep: crashAfterStep(process.env.INPLACE_AGENT_FAULT_CRASH_AFTER_STEP, log),
    // Going on without a journal could leave a container stopped with no record of it: exit, and let the
    // supervisor's restart recover every operation from its last good record.
    onFatal: (err) => {
      log.error('exiting: the operation journal cannot be written', { error: String(err), stateDir: opts.stateDir });
      process.exit(1);
    },
  });
  observeOperations(engine, registry);
  await engine.start();

  const api = await startApiServer(opts.listen, {
    socketGid,
    engine,
    pulls,
    parseKeyring,
    runtimeKind: runtime.kind,
    restartDefaults: { graceSeconds: opts.defaultGraceSeconds, minReadyMs: opts.defaultMinReadyMs, timeoutMs: opts.defaultTimeoutMs },
  });
  log.info('agent API listening', { address: api.address });

  const prewarm = opts.prewarmFile
    ? new Prewarmer(pulls, { file: opts.prewarmFile, intervalMs: opts.prewarmIntervalMs, pin: opts.prewarmPin }, clock, log.child({ component: 'prewarm' }))
    : undefined;
  prewarm?.start();

  let http: HttpEndpoints | undefined;
  if (opts.metricsAddr) {
    const liveness = new RuntimeLiveness(() => runtime.version(), opts.livenessRuntimeTimeoutMs, clock);
    http = await startHttpEndpoints(opts.metricsAddr, registry, {
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
  }

  let stopping: Promise<void> | undefined;
  return {
    runtime,
    engine,
    api,
    http,
    registry,
    shutdown: () =>
      (stopping ??= (async () => {
        log.info('draining: no new operations; running ones stop at a safe point');
        api.health.setStatus('', 'NOT_SERVING');
        await prewarm?.stop();
        await engine.drain();
        // Operations are drained: what is left are reads and watch streams, cut after a short grace.
        await api.stop(1000);
        pullWiring.close();
        await http?.close();
        runtime.close();
        log.info('stopped');
      })()),
  };
}
