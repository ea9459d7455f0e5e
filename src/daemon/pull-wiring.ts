// Builds the node's pull service for the daemon, with containerd byte progress when the runtime is CRI on
// containerd, and node-wide registry credentials from --auth-file.
import type { Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import { parseAuthConfig, readAuthFile } from '../pull/auth.js';
import { createNodePullService } from '../pull/node-pull-service.js';
import type { AuthKeyring, PullService } from '../pull/types.js';
import type { DaemonOptions } from './options.js';

/** The pull service, the parser of a request's config.json credentials, and what to release at shutdown. */
export interface PullWiring {
  pulls: PullService;
  parseKeyring: (json: string) => AuthKeyring;
  close(): void;
}

/** Creates the node's pull service from the daemon's options. */
export async function createPullService(runtime: Runtime, opts: DaemonOptions, registry: Registry, log: Logger, clock: Clock): Promise<PullWiring> {
  const node = await createNodePullService({
    runtime,
    containerdAddress: opts.containerdAddress,
    maxParallel: opts.maxParallelPulls,
    retries: opts.pullRetries,
    stallTimeoutMs: opts.pullStallTimeoutMs,
    timeoutMs: opts.pullTimeoutMs,
    minFreeDiskBytes: opts.minFreeDiskBytes,
    keyring: opts.authFile ? await readAuthFile(opts.authFile) : undefined,
    metricsRegistry: registry,
    logger: log.child({ component: 'pull' }),
    clock,
  });
  return { pulls: node.service, parseKeyring: (json) => parseAuthConfig(json, 'auth_config_json'), close: node.close };
}
