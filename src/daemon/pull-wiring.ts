// Builds the node's pull service for the daemon, with containerd byte progress when the runtime is CRI on
// containerd.
import type { Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import { socketPathOf } from '../runtime/detect.js';
import { parseAuthConfig } from '../pull/auth.js';
import { ContainerdProgressSource } from '../pull/containerd-progress.js';
import { ImagePullService } from '../pull/pull-service.js';
import type { AuthKeyring, PullService } from '../pull/types.js';
import type { DaemonOptions } from './options.js';

/** The pull service and the parser of config.json credentials it takes. */
export async function createPullService(
  runtime: Runtime,
  opts: DaemonOptions,
  registry: Registry,
  log: Logger,
  clock: Clock,
): Promise<{ pulls: PullService; parseKeyring: (json: string) => AuthKeyring }> {
  let progressSource: ContainerdProgressSource | undefined;
  if (runtime.kind === 'cri') {
    const v = await runtime.version();
    const address = opts.containerdAddress ?? (v.name === 'containerd' ? socketPathOf(v.endpoint) : undefined);
    if (address) progressSource = new ContainerdProgressSource({ address, clock, logger: log });
  }
  const pulls = new ImagePullService({
    runtime,
    maxParallel: opts.maxParallelPulls,
    retries: opts.pullRetries,
    timeoutMs: opts.pullTimeoutMs,
    stallTimeoutMs: opts.pullStallTimeoutMs,
    minFreeDiskBytes: opts.minFreeDiskBytes,
    progressSource,
    clock,
    logger: log,
    metricsRegistry: registry,
  });
  return { pulls, parseKeyring: (json) => parseAuthConfig(json, 'request auth config') };
}
