// Builds the node's pull service for the daemon: on a runtime whose pulls report no progress (CRI) that is
// containerd, with byte progress read from containerd's own API (on --containerd-address, or the CRI endpoint
// itself, which containerd serves on the same socket); elsewhere without a progress source.
import { asAgentError } from '../errors.js';
import { CRI_NAMESPACE } from '../runtime/types.js';
import type { ProgressSource } from '../runtime/progress-source.js';
import { ImagePullService, type PullServiceOptions } from './pull-service.js';

/** Options of createNodePullService: the service's, plus where containerd is. */
export interface NodePullServiceOptions extends Omit<PullServiceOptions, 'progressSource'> {
  /** containerd's socket for byte progress on CRI; default: the CRI endpoint when the runtime is containerd. */
  containerdAddress?: string;
  /** containerd namespace of CRI (default `k8s.io`). */
  containerdNamespace?: string;
}

/** The service and what to release at shutdown. */
export interface NodePullService {
  service: ImagePullService;
  /** Where byte progress of CRI pulls comes from: a containerd address, or '' when none. */
  progressFrom: string;
  /** Fails running pulls and closes the progress source's connection. */
  close(): void;
}

/** Creates the pull service; probes containerd once and logs (never fails) when its API cannot be read. */
export async function createNodePullService(opts: NodePullServiceOptions): Promise<NodePullService> {
  const log = opts.logger;
  let source: ProgressSource | undefined;
  let progressFrom = '';
  if (!opts.runtime.capabilities.pullReportsProgress) {
    let address = opts.containerdAddress;
    if (!address) {
      try {
        const v = await opts.runtime.version();
        if (v.name === 'containerd') address = v.endpoint;
      } catch {
        // the daemon reports an unreachable runtime itself
      }
    }
    if (address) {
      // containerd's client and protos are loaded only here, for a runtime that is containerd.
      const { ContainerdClient } = await import('../runtime/containerd/client.js');
      const { ContainerdProgressSource } = await import('../runtime/containerd/pull-progress.js');
      const namespace = opts.containerdNamespace ?? CRI_NAMESPACE;
      const probe = new ContainerdClient(address, namespace);
      try {
        await probe.listLeases();
        source = new ContainerdProgressSource({ address, namespace, clock: opts.clock, logger: log });
        progressFrom = address;
        log?.info('pull progress from containerd', { address, namespace });
      } catch (err) {
        log?.warn('cannot read containerd leases and ingests: CRI pulls report phases only, no bytes', { address, error: asAgentError(err).message });
      } finally {
        probe.close();
      }
    }
  }
  const service = new ImagePullService({ ...opts, progressSource: source });
  return {
    service,
    progressFrom,
    close: () => {
      service.stop();
      source?.close();
    },
  };
}
