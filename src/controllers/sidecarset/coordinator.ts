// The SidecarSet coordinator inside every agent of the DaemonSet. One agent at a time leads (the Lease
// `inplace-sidecarsets-slot-0`, held by node name and agent id) and plans every SidecarSet each round; the sidecar
// upgrades it starts are ContainerRestarts, which each node's agent runs as ever (the pod's image patched, so the
// kubelet recreates that container alone). Nothing is handed over: every round reads the cluster again (plan.ts).
// The election, the watches it reads through while it leads (sidecarset-cache.ts) and the pace of its rounds (on
// every change heard, and a resync with fresh reads) are the kit's, as the rollout coordinator's
// (kit/elected-coordinator.ts).
import type { Clock } from '../../clock.js';
import { asAgentError } from '../../errors.js';
import { isConflict } from '../../k8s/api-error.js';
import type { Logger } from '../../log.js';
import type { LeaseApi } from '../../k8s/lease-election.js';
import { CreateRefusals } from '../kit/create-refusals.js';
import { ELECTED_DEFAULTS, ElectedCoordinator, type ElectedOptions } from '../kit/elected-coordinator.js';
import { StatusWrites } from '../kit/status-pace.js';
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
  /** SidecarSets whose last round failed (said once per streak). */
  private readonly failingSets = new Set<string>();
  /** Creates whose name was taken or refused, backing off (kit/create-refusals.ts). */
  private readonly refusals = new CreateRefusals();
  /** When each SidecarSet's status was last written (kit/status-pace.ts). */
  private readonly statusWrites = new StatusWrites();

  constructor(
    api: SidecarSetApi,
    lease: LeaseApi,
    private readonly opts: ElectedOptions,
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
    const uids = new Set(sets.map((s) => s.metadata.uid ?? ''));
    this.refusals.keepOnly(uids);
    this.statusWrites.keepOnly(uids);
    let wakeAt: number | undefined;
    for (const set of sets) {
      if (!this.leading()) break;
      const deps = { api: reads, nowMs: () => this.clock.now(), leading: () => this.leading(), log: this.log, refusals: this.refusals, statusWrites: this.statusWrites };
      try {
        const at = await reconcileSidecarSet(deps, set);
        if (at !== undefined) wakeAt = Math.min(wakeAt ?? Infinity, at);
        this.failingSets.delete(set.metadata.uid ?? '');
      } catch (err) {
        // A status write that lost a race (409) is done again once its watch has the change.
        const conflict = isConflict(err);
        const level = conflict || this.failingSets.has(set.metadata.uid ?? '') ? 'debug' : 'warn';
        if (!conflict) this.failingSets.add(set.metadata.uid ?? '');
        this.log.log(level, 'sidecarset round failed; trying again', { sidecarset: set.metadata.name, error: asAgentError(err).message });
        wakeAt = Math.min(wakeAt ?? Infinity, this.clock.now() + this.opts.retryMs);
      }
    }
    return wakeAt;
  }
}
