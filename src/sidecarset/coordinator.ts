// The SidecarSet coordinator inside every agent of the DaemonSet. One agent at a time holds the coordination
// Lease (the fleet's slot machinery: slot 0 of "inplace-sidecarsets", held by node name and agent id) and plans
// every SidecarSet each round; the sidecar upgrades it starts are ContainerRestarts, which each node's agent runs
// as ever (the pod's image patched, so the kubelet recreates that container alone).
//
//   follower --lease free or expired--> take it --won--> coordinator --renew lost / stopping--> follower
//
// A coordinator acts only while its last renewal is younger than two thirds of the lease, and a follower takes
// the Lease only once it has expired. Nothing is handed over: every round reads the cluster again (plan.ts).
import type { Clock } from '../clock.js';
import { asAgentError } from '../errors.js';
import { isConflict } from '../kube/api-error.js';
import type { Logger } from '../log.js';
import type { FleetApi, SlotLease } from '../fleet/fleet-api.js';
import { SlotClaimer, slotName } from '../fleet/slots.js';
import { planSidecarSet } from './plan.js';
import type { SidecarSetApi } from './sidecarset-api.js';
import type { SidecarSet } from './types.js';

/** The coordination Lease's group among the slot Leases: the Lease is `inplace-sidecarsets-slot-0`. */
export const SIDECAR_COORDINATION = 'inplace-sidecarsets';

/** Settings of the coordinator. */
export interface SidecarCoordinatorOptions {
  /** This agent's identity as the Lease holder (node name and agent id). */
  holder: string;
  leaseNamespace: string;
  leaseSeconds: number;
  /** How often a round runs while leading, and a follower looks at the Lease (ms). */
  roundMs: number;
}

/** Defaults for a real agent. */
export const SIDECAR_COORDINATOR_DEFAULTS = { leaseSeconds: 15, roundMs: 2000 };

/** One round over one SidecarSet: read, plan, start the upgrades (while still leading), write the status. */
export async function reconcileSidecarSet(api: SidecarSetApi, set: SidecarSet, nowMs: number, leading: () => boolean, log: Logger): Promise<void> {
  const [pods, restarts] = await Promise.all([api.listPods(set), api.listRestarts(set)]);
  const plan = planSidecarSet({ set, pods, restarts, nowMs });
  for (const a of plan.actions) {
    if (!leading()) return;
    try {
      await api.createRestart(set, a);
      log.info('sidecarset: sidecar upgrade started', { sidecarset: set.metadata.name, pod: `${a.namespace}/${a.pod}`, containerrestart: a.name, images: a.containers.map((c) => `${c.name}=${c.image}`).join(',') });
    } catch (err) {
      // Exists: started already (by this agent or an earlier coordinator); never a second one.
      if (!isConflict(err)) throw err;
    }
  }
  const { lastTransitionTime: _a, ...was } = set.status?.conditions?.[0] ?? {};
  const { lastTransitionTime: _b, ...now } = plan.status.conditions?.[0] ?? {};
  const same = JSON.stringify({ ...set.status, conditions: was }) === JSON.stringify({ ...plan.status, conditions: now });
  if (leading() && !same) await api.writeStatus(set, plan.status);
}

/** Takes part in the election and, while holding the Lease, coordinates every SidecarSet. */
export class SidecarSetCoordinator {
  private readonly stopping = new AbortController();
  private readonly slots: SlotClaimer;
  private held?: SlotLease;
  private loop?: Promise<void>;
  private failing = false;

  constructor(
    private readonly api: SidecarSetApi,
    fleetApi: FleetApi,
    private readonly opts: SidecarCoordinatorOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.slots = new SlotClaimer(fleetApi, opts.leaseNamespace, opts.holder, opts.leaseSeconds, clock);
  }

  /** Starts in the background. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Stops; gives the Lease back so that another agent takes over at once. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    if (this.held) await this.slots.release(this.held).catch(() => undefined);
    this.held = undefined;
  }

  /** Whether this agent may act as the coordinator now. */
  leading(): boolean {
    return !!this.held && !this.stopping.signal.aborted && this.clock.now() < this.held.renewMs + (this.opts.leaseSeconds * 1000 * 2) / 3;
  }

  private async run(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      try {
        await this.elect();
        if (this.leading()) await this.round();
        if (this.failing) this.log.info('sidecarset coordination works again');
        this.failing = false;
      } catch (err) {
        // One line per streak of failures (no RBAC, no CRD, the API server away), not one per round.
        if (!this.failing) this.log.warn('sidecarset coordination round failed; trying again each round, quietly', { error: asAgentError(err).message });
        this.failing = true;
      }
      await this.clock.sleep(this.opts.roundMs, this.stopping.signal).catch(() => undefined);
    }
  }

  /** Renews the held Lease when a third of it has passed; takes it when it is free or expired. */
  private async elect(): Promise<void> {
    if (this.held) {
      if (this.clock.now() - this.held.renewMs < (this.opts.leaseSeconds * 1000) / 3) return;
      const renewed = await this.slots.renew(this.held);
      if (!renewed) this.log.info('no longer coordinating SidecarSets: the Lease was taken', { lease: slotName(SIDECAR_COORDINATION, 0) });
      this.held = renewed;
      return;
    }
    this.held = await this.slots.tryAcquire(SIDECAR_COORDINATION, 1);
    if (this.held) this.log.info('coordinating SidecarSets: this agent holds the Lease', { lease: slotName(SIDECAR_COORDINATION, 0), holder: this.opts.holder });
  }

  private async round(): Promise<void> {
    for (const set of await this.api.listSidecarSets()) {
      if (!this.leading()) return;
      try {
        await reconcileSidecarSet(this.api, set, this.clock.now(), () => this.leading(), this.log);
      } catch (err) {
        // A status write that lost a race (409) is done again next round, from a fresh read.
        this.log.log(isConflict(err) ? 'debug' : 'warn', 'sidecarset round failed; trying again', { sidecarset: set.metadata.name, error: asAgentError(err).message });
      }
    }
  }
}
