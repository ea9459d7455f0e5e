// The rollout coordinator inside every agent of the DaemonSet. One agent at a time holds the coordination
// Lease (the fleet's slot machinery: slot 0 of "inplace-rollouts", held by node name and agent id) and plans every
// InPlaceRollout; the pod updates it starts are ContainerRestarts, which each node's agent runs as ever.
//
//   follower --lease free or expired (seen through the watch)--> try to take it --won--> coordinator
//   coordinator --renew every third of the lease--> coordinator; --renew lost / stopping--> follower
//
// A coordinator acts only while its last renewal is younger than two thirds of the lease, and a follower takes
// the lease only once it has expired, so two agents never act at once (clocks agreeing within a third of the
// lease). Nothing else is handed over: every round reads the cluster again (see reconcile.ts).
import type { Clock } from '../clock.js';
import { asAgentError } from '../errors.js';
import type { Logger } from '../log.js';
import type { FleetApi, PrewarmFollower, SlotLease } from '../fleet/fleet-api.js';
import { SlotClaimer, slotFree, slotName } from '../fleet/slots.js';
import { reconcileRollout } from './reconcile.js';
import type { RolloutApi } from './rollout-api.js';
import type { InPlaceRollout } from './types.js';

/** The coordination Lease's group name among the fleet's slot Leases: the Lease is `inplace-rollouts-slot-0`. */
export const COORDINATION = 'inplace-rollouts';

/** Settings of the coordinator. */
export interface CoordinatorOptions {
  node: string;
  /**
   * This agent's identity as the Lease holder: unique per agent (node name and agent id), so that two agents
   * that share a node name (a second agent, a test's) are never both the holder.
   */
  holder: string;
  /** Namespace of the coordination Lease (the agent's own). */
  leaseNamespace: string;
  leaseSeconds: number;
  /** How often the coordinator reconciles while some rollout is under way (ms). */
  activeTickMs: number;
  /** How often otherwise, and how often a follower looks at the Lease (ms). */
  idleTickMs: number;
  /** Only the rollouts of this namespace; all when undefined. */
  namespace?: string;
}

/** Defaults for a real agent. */
export const COORDINATOR_DEFAULTS = { leaseSeconds: 15, activeTickMs: 1000, idleTickMs: 5000 };

const finished = (r: InPlaceRollout) => r.status?.observedGeneration === r.metadata.generation && (r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed');

/** Takes part in the election and, while holding the Lease, coordinates every rollout. */
export class RolloutCoordinator {
  private readonly stopping = new AbortController();
  private readonly slots: SlotClaimer;
  private held?: SlotLease;
  private view?: SlotLease[];
  private follower?: PrewarmFollower;
  private loop?: Promise<void>;
  private nap?: AbortController;
  private watchWarned = false;
  private failing = false;
  /** Rollouts whose last round failed (said once per streak). */
  private readonly failingRollouts = new Set<string>();

  constructor(
    private readonly api: RolloutApi,
    private readonly fleetApi: FleetApi,
    private readonly opts: CoordinatorOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.slots = new SlotClaimer(fleetApi, opts.leaseNamespace, opts.holder, opts.leaseSeconds, clock);
  }

  /** Starts in the background. */
  start(): void {
    this.follower = this.fleetApi.followSlots(
      this.opts.leaseNamespace,
      COORDINATION,
      (leases) => {
        this.view = leases;
        this.watchWarned = false;
        // A Lease given back or taken: look now rather than at the next tick.
        this.nap?.abort();
      },
      (f) => {
        this.view = undefined;
        if (!this.watchWarned) this.log.warn('watch of the rollout coordination Lease failed; listing it each round meanwhile', { error: asAgentError(f.error).message, retryInMs: f.retryInMs });
        this.watchWarned = true;
      },
    );
    this.loop ??= this.run();
  }

  /** Stops; gives the Lease back so that another agent takes over at once. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.nap?.abort();
    await this.loop;
    await this.follower?.stop().catch(() => undefined);
    if (this.held) await this.slots.release(this.held).catch(() => undefined);
    this.held = undefined;
  }

  /** Whether this agent may act as the coordinator now. */
  leading(): boolean {
    return !!this.held && !this.stopping.signal.aborted && this.clock.now() < this.held.renewMs + (this.opts.leaseSeconds * 1000 * 2) / 3;
  }

  private async run(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      let busy = false;
      try {
        await this.elect();
        if (this.leading()) busy = await this.coordinate();
        if (this.failing) this.log.info('rollout coordination works again');
        this.failing = false;
      } catch (err) {
        // One line per streak of failures (no RBAC for rollouts, no CRD, the API server away), not one per round.
        if (!this.failing) this.log.warn('rollout coordination round failed; trying again each round, quietly', { error: asAgentError(err).message });
        this.failing = true;
      }
      this.nap = new AbortController();
      try {
        await this.clock.sleep(this.pause(busy), AbortSignal.any([this.stopping.signal, this.nap.signal]));
      } catch {
        // woken or stopping
      } finally {
        this.nap = undefined;
      }
    }
  }

  /** How long to wait before the next round: a follower wakes when the holder's Lease would expire. */
  private pause(busy: boolean): number {
    if (this.held) return busy ? this.opts.activeTickMs : Math.min(this.opts.idleTickMs, (this.opts.leaseSeconds * 1000) / 3);
    const lease = this.view?.find((l) => l.name === slotName(COORDINATION, 0));
    if (!lease || !this.view) return this.opts.idleTickMs;
    const expiresIn = lease.renewMs + lease.durationSeconds * 1000 - this.clock.now();
    return Math.max(50, Math.min(this.opts.idleTickMs, expiresIn + 50));
  }

  /** Renews the held Lease when a third of it has passed; takes it when it is free or expired. */
  private async elect(): Promise<void> {
    const now = this.clock.now();
    const leaseMs = this.opts.leaseSeconds * 1000;
    if (this.held) {
      if (now - this.held.renewMs < leaseMs / 3) return;
      const renewed = await this.slots.renew(this.held);
      if (!renewed) this.log.info('no longer coordinating rollouts: the Lease was taken', { lease: slotName(COORDINATION, 0) });
      this.held = renewed;
      return;
    }
    const seen = this.view;
    const lease = seen?.find((l) => l.name === slotName(COORDINATION, 0));
    if (seen && lease && !slotFree(lease, now) && lease.holder !== this.opts.holder) return;
    this.held = await this.slots.tryAcquire(COORDINATION, 1, seen);
    if (this.held) this.log.info('coordinating rollouts: this agent holds the Lease', { lease: slotName(COORDINATION, 0), namespace: this.opts.leaseNamespace, holder: this.opts.holder });
  }

  /** One round over every rollout; true while any is under way. */
  private async coordinate(): Promise<boolean> {
    const rollouts = await this.api.listRollouts(this.opts.namespace);
    let busy = false;
    for (const r of rollouts) {
      if (!this.leading()) break;
      try {
        const plan = await reconcileRollout({ api: this.api, node: this.opts.node, nowMs: () => this.clock.now(), leading: () => this.leading(), log: this.log }, r, rollouts);
        busy ||= plan.status.phase === 'Progressing' || plan.status.phase === 'Prewarming' || !finished(r);
        this.failingRollouts.delete(r.metadata.uid ?? '');
      } catch (err) {
        busy = true;
        const level = this.failingRollouts.has(r.metadata.uid ?? '') ? 'debug' : 'warn';
        this.failingRollouts.add(r.metadata.uid ?? '');
        this.log.log(level, 'rollout round failed; trying again', { rollout: `${r.metadata.namespace}/${r.metadata.name}`, error: asAgentError(err).message });
      }
    }
    return busy;
  }
}
