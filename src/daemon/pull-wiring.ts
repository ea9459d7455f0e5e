// Builds the node's pull service for the daemon, with containerd byte progress when the runtime is CRI on
// containerd (runtime-factories.ts), and node-wide registry credentials from --auth-file.
import type { Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import { parseAuthConfig, readAuthFile } from '../pull/auth.js';
import { ImagePullService } from '../pull/pull-service.js';
import type { AuthKeyring, PullService } from '../pull/types.js';
import type { DaemonOptions } from './options.js';
import { progressSourceFor } from './runtime-factories.js';

/** The pull service, the parser of a request's config.json credentials, and what to release at shutdown. */
export interface PullWiring {
  pulls: PullService;
  parseKeyring: (json: string) => AuthKeyring;
  /** Fails running pulls and closes the progress source's connection. */
  close(): void;
}

/** Creates the node's pull service from the daemon's options. */
export async function createPullService(runtime: Runtime, opts: DaemonOptions, registry: Registry, log: Logger, clock: Clock): Promise<PullWiring> {
  const logger = log.child({ component: 'pull' });
  const progress = await progressSourceFor(runtime, { containerdAddress: opts.containerdAddress, clock, logger });
  const service = new ImagePullService({
    runtime,
    progressSource: progress.source,
    maxParallel: opts.maxParallelPulls,
    retries: opts.pullRetries,
    stallTimeoutMs: opts.pullStallTimeoutMs,
    timeoutMs: opts.pullTimeoutMs,
    minFreeDiskBytes: opts.minFreeDiskBytes,
    keyring: opts.authFile ? await readAuthFile(opts.authFile) : undefined,
    metricsRegistry: registry,
    logger,
    clock,
  });
  return {
    pulls: service,
    parseKeyring: (json) => parseAuthConfig(json, 'auth_config_json'),
    close: () => {
      service.stop();
      progress.source?.close();
    },
  };
}
