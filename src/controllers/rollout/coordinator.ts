// The rollout coordinator inside every agent of the DaemonSet. One agent at a time leads (the Lease
// `inplace-rollouts-slot-0`, held by node name and agent id) and plans every InPlaceRollout; the pod updates it
// starts are ContainerRestarts, which each node's agent runs as ever. Nothing else is handed over: every round
// reads the cluster again (see reconcile.ts). The election, the watches it reads through while it leads and the
// pace of its rounds are the kit's (kit/elected-coordinator.ts).
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { LeaseApi } from '../../k8s/lease-election.js';
import { ELECTED_DEFAULTS, ElectedCoordinator, type ElectedOptions } from '../kit/elected-coordinator.js';
import { reconcileRollout } from './reconcile.js';
import type { RolloutApi } from './rollout-api.js';
import type { DeploymentApi } from './workloads/deployment-api.js';
import { directView, type RolloutView } from './rollout-cache.js';

/** The election's name; its Lease (the name agents of earlier versions used, so that both agree during an upgrade). */
export const COORDINATION = 'inplace-rollouts';
export const COORDINATION_LEASE = 'inplace-rollouts-slot-0';

/** Settings of the coordinator. */
export interface CoordinatorOptions extends ElectedOptions {
  node: string;
  /** Only the rollouts of this namespace; all when undefined. */
  namespace?: string;
  /** Deployments and their ReplicaSets, for rollouts of Deployments. */
  deployments?: DeploymentApi;
}

/** Defaults for a real agent. */
export const COORDINATOR_DEFAULTS = ELECTED_DEFAULTS;

/** Takes part in the election and, while holding the Lease, coordinates every rollout. */
export class RolloutCoordinator extends ElectedCoordinator<RolloutView> {
  constructor(
    api: RolloutApi,
    lease: LeaseApi,
    private readonly opts: CoordinatorOptions,
    clock: Clock,
    log: Logger,
    /** The view the rounds read through while leading (default: the API server itself, no watches). */
    view: (api: RolloutApi) => RolloutView = directView,
  ) {
    super(lease, opts, clock, log, 'rollouts', () => view(api));
  }

  /** One round over every rollout; answers when a plan asked to look again (ms since the epoch). */
  protected async round(reads: RolloutView): Promise<number | undefined> {
    const rollouts = await reads.listRollouts(this.opts.namespace);
    const deps = { api: reads, deployments: this.opts.deployments, node: this.opts.node, nowMs: () => this.clock.now(), leading: () => this.leading(), log: this.log, refusals: this.refusals, statusWrites: this.statusWrites };
    return this.eachObject(rollouts, async (r) => (await reconcileRollout(deps, r, rollouts)).wakeAtMs);
  }
}
