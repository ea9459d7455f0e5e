// Starts the SidecarSet coordinator when the agent runs in Kubernetes mode with rollouts on (a kubeconfig and a
// node name): one agent of the DaemonSet at a time upgrades the SidecarSets' sidecars in place.
import type { KubeConfig } from '../k8s/client.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { KubeLease } from '../k8s/kube-lease.js';
import { followerDeps } from '../k8s/list-follower.js';
import { SIDECAR_COORDINATION, SIDECAR_COORDINATION_LEASE, SIDECAR_COORDINATOR_DEFAULTS, SidecarSetCoordinator } from '../controllers/sidecarset/coordinator.js';
import { KubeSidecarSetApi } from '../controllers/sidecarset/sidecarset-api.js';
import { SidecarSetCache, sidecarSetLists } from '../controllers/sidecarset/sidecarset-cache.js';
import type { DaemonOptions } from './options.js';

/** The started coordinator for this node (agentId names it in the Lease); undefined when rollouts are turned off. */
export function startSidecarSets(kc: KubeConfig, nodeName: string, agentId: string, opts: DaemonOptions, clock: Clock, log: Logger): SidecarSetCoordinator | undefined {
  if (!opts.rollouts) return undefined;
  const slog = log.child({ component: 'sidecarset' });
  const c = new SidecarSetCoordinator(
    new KubeSidecarSetApi(kc),
    new KubeLease(kc, clock, opts.fleetNamespace, SIDECAR_COORDINATION_LEASE, SIDECAR_COORDINATION),
    { ...SIDECAR_COORDINATOR_DEFAULTS, holder: `${nodeName}/${agentId}`, leaseNamespace: opts.fleetNamespace, leaseSeconds: Math.ceil(opts.rolloutLeaseMs / 1000) },
    clock,
    slog,
    // While it leads, the coordinator reads through watches and acts on every change they hear.
    (api) => new SidecarSetCache(followerDeps(kc, clock), sidecarSetLists(kc), api, clock, slog),
  );
  c.start();
  return c;
}
