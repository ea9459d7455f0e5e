// The runtime adapters, as detection's factories, and the progress source that stands in for a runtime whose
// pulls report no bytes. The only place that names the adapters; each adapter is imported only when detection
// picks it, so an agent on containerd never loads dockerode and one on Docker never loads the CRI protos
// (idle RSS: docs/benchmarks.md).
import type { Clock } from '../clock.js';
import { asAgentError } from '../errors.js';
import type { Logger } from '../log.js';
import type { RuntimeFactories } from '../runtime/detect.js';
import type { ProgressSource } from '../runtime/progress-source.js';
import type { Runtime } from '../runtime/runtime.js';
import { CRI_NAMESPACE } from '../runtime/types.js';

/** Factories creating a CRI or a Docker adapter for an endpoint, loading that adapter's code on first use. */
export function runtimeFactories(): RuntimeFactories {
  return {
    cri: async (endpoint) => new (await import('../runtime/cri/cri-runtime.js')).CriRuntime(endpoint),
    docker: async (host) => new (await import('../runtime/docker/docker-runtime.js')).DockerRuntime(host),
  };
}

/** Where byte progress of the runtime's pulls can be read besides the pull call. */
export interface ProgressSourceOptions {
  /** containerd's socket (--containerd-address); default: the CRI endpoint when the runtime is containerd. */
  containerdAddress?: string;
  /** containerd namespace of CRI (default `k8s.io`). */
  containerdNamespace?: string;
  clock?: Clock;
  logger?: Logger;
}

/** A progress source and where it reads: a containerd address, or '' with no source. */
export interface ChosenProgressSource {
  source?: ProgressSource;
  from: string;
}

/**
 * The progress source for a runtime whose pulls report no bytes (CRI): containerd's own API, on
 * --containerd-address or on the CRI endpoint itself when containerd serves it. Probes containerd once; logs
 * (never fails) when its API cannot be read. None for a runtime that reports progress itself (Docker).
 */
export async function progressSourceFor(runtime: Runtime, opts: ProgressSourceOptions = {}): Promise<ChosenProgressSource> {
  if (runtime.capabilities.pullReportsProgress) return { from: '' };
  const log = opts.logger;
  let address = opts.containerdAddress;
  if (!address) {
    try {
      const v = await runtime.version();
      if (v.name === 'containerd') address = v.endpoint;
    } catch {
      // the daemon reports an unreachable runtime itself
    }
  }
  if (!address) return { from: '' };
  // containerd's client and protos are loaded only here, for a runtime that is containerd.
  const { ContainerdClient } = await import('../runtime/containerd/client.js');
  const { ContainerdProgressSource } = await import('../runtime/containerd/pull-progress.js');
  const namespace = opts.containerdNamespace ?? CRI_NAMESPACE;
  const probe = new ContainerdClient(address, namespace);
  try {
    await probe.listLeases();
    log?.info('pull progress from containerd', { address, namespace });
    return { source: new ContainerdProgressSource({ address, namespace, clock: opts.clock, logger: log }), from: address };
  } catch (err) {
    log?.warn('cannot read containerd leases and ingests: CRI pulls report phases only, no bytes', { address, error: asAgentError(err).message });
    return { from: '' };
  } finally {
    probe.close();
  }
}
