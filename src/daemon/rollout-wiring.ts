// Starts the rollout coordinator when the agent runs in Kubernetes mode (a kubeconfig and a node name).
import type { KubeConfig } from '../k8s/client.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { KubeLease } from '../k8s/kube-lease.js';
import { COORDINATION, COORDINATION_LEASE, COORDINATOR_DEFAULTS, RolloutCoordinator } from '../controllers/rollout/coordinator.js';
import { KubeRolloutApi } from '../controllers/rollout/rollout-api.js';
import { KubeDeploymentApi } from '../controllers/rollout/workloads/deployment-api.js';
import { kubeLists, RolloutCache } from '../controllers/rollout/rollout-cache.js';
import { followerDeps } from '../k8s/list-follower.js';
import type { DaemonOptions } from './options.js';

/** The started coordinator for this node; undefined when rollouts are turned off. */
/** agentId: this agent's identity (its state directory's agent-id), which names it in the coordination Lease. */
export async function startRollouts(kc: KubeConfig, nodeName: string, agentId: string, opts: DaemonOptions, clock: Clock, log: Logger): Promise<RolloutCoordinator | undefined> {
  if (!opts.rollouts) return undefined;
  const holder = `${nodeName}/${agentId}`;
  const rlog = log.child({ component: 'rollout' });
  const c = new RolloutCoordinator(
    new KubeRolloutApi(kc),
    new KubeLease(kc, clock, opts.fleetNamespace, COORDINATION_LEASE, COORDINATION),
    { ...COORDINATOR_DEFAULTS, node: nodeName, holder, leaseNamespace: opts.fleetNamespace, leaseSeconds: Math.ceil(opts.rolloutLeaseMs / 1000), namespace: opts.watchNamespace, deployments: new KubeDeploymentApi(kc) },
    clock,
    rlog,
    // While it leads, the coordinator reads through watches and acts on every change they hear.
    (api) => new RolloutCache(followerDeps(kc, clock), kubeLists(kc), api, clock, rlog),
  );
  c.start();
  return c;
}
