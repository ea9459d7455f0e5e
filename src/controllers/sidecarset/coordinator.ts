// The SidecarSet coordinator inside every agent of the DaemonSet. One agent at a time leads (the Lease
// `inplace-sidecarsets-slot-0`, held by node name and agent id) and plans every SidecarSet each round; the sidecar
// upgrades it starts are ContainerRestarts, which each node's agent runs as ever (the pod's image patched, so the
// kubelet recreates that container alone). Nothing is handed over: every round reads the cluster again (plan.ts).
// The election, the watches it reads through while it leads (sidecarset-cache.ts) and the pace of its rounds (on
// every change heard, and a resync with fresh reads) are the kit's, as the rollout coordinator's
// (kit/elected-coordinator.ts).
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { LeaseApi } from '../../k8s/lease-election.js';
import { ELECTED_DEFAULTS, ElectedCoordinator, type ElectedOptions } from '../kit/elected-coordinator.js';
import { reconcileSidecarSet } from './round.js';
import type { SidecarSetApi } from './sidecarset-api.js';
import { directSidecarView, type SidecarSetView } from './sidecarset-cache.js';

/** The election's name; its Lease (named as by earlier versions, so that both agree during an upgrade). */
export const SIDECAR_COORDINATION = 'inplace-sidecarsets';
export const SIDECAR_COORDINATION_LEASE = 'inplace-sidecarsets-slot-0';

/** Defaults for a real agent. */
export const SIDECAR_COORDINATOR_DEFAULTS = ELECTED_DEFAULTS;

/** Takes part in the election and, while holding the Lease, coordinates every SidecarSet. */
export class SidecarSetCoordinator extends ElectedCoordinator<SidecarSetView> {
  constructor(
    api: SidecarSetApi,
    lease: LeaseApi,
    opts: ElectedOptions,
    clock: Clock,
    log: Logger,
    /** The view the rounds read through while leading (default: the API server itself, no watches). */
    view: (api: SidecarSetApi) => SidecarSetView = directSidecarView,
  ) {
    super(lease, opts, clock, log, 'SidecarSets', () => view(api));
  }

  /** One round over every SidecarSet; answers when one asked to look again (ms since the epoch). */
  protected async round(reads: SidecarSetView): Promise<number | undefined> {
    const sets = await reads.listSidecarSets();
    const deps = { api: reads, nowMs: () => this.clock.now(), leading: () => this.leading(), log: this.log, refusals: this.refusals, statusWrites: this.statusWrites };
    return this.eachObject(sets, (set) => reconcileSidecarSet(deps, set));
  }
}
