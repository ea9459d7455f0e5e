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
//
// While it leads, the coordinator reads through watches (rollout-cache.ts, started when it takes the Lease and
// stopped when it loses it, so a new coordinator begins from fresh lists) and runs a round on every change they
// hear, when a plan says it must look again (a pod's minReadySeconds running out), and every resyncMs with every
// read sent to the API server, as a safety net for a watch that missed something.
import type { Clock } from '../clock.js';
import { AgentError, asAgentError } from '../errors.js';
import type { Logger } from '../log.js';
import type { FleetApi, PrewarmFollower, SlotLease } from '../fleet/fleet-api.js';
import { SlotClaimer, slotFree, slotName } from '../fleet/slots.js';
import { CreateRefusals } from './create-refusals.js';
import { reconcileRollout } from './reconcile.js';
import type { RolloutApi } from './rollout-api.js';
import type { DeploymentApi } from './workloads/deployment-api.js';
import { directView, type RolloutView } from './rollout-cache.js';
import { StatusWrites } from './status-pace.js';

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
  /** How often the coordinator runs a round with every read sent to the API server, whatever it heard (ms). */
  resyncMs: number;
  /** How often a follower looks at the Lease when it cannot watch it (ms). */
  idleTickMs: number;
  /** After a round failed, the least wait before the next (ms). */
  retryMs: number;
  /** Only the rollouts of this namespace; all when undefined. */
  namespace?: string;
  /** Deployments and their ReplicaSets, for rollouts of Deployments. */
  deployments?: DeploymentApi;
}

/** Defaults for a real agent. */
export const COORDINATOR_DEFAULTS = { leaseSeconds: 15, resyncMs: 10_000, idleTickMs: 5000, retryMs: 1000 };

/** Takes part in the election and, while holding the Lease, coordinates every rollout. */
export class RolloutCoordinator {
  private readonly stopping = new AbortController();
  private readonly slots: SlotClaimer;
  private held?: SlotLease;
  private view_?: SlotLease[];
  private follower?: PrewarmFollower;
  private loop?: Promise<void>;
  private nap?: AbortController;
  private watchWarned = false;
  private failing = false;
  /** What the rounds read through while this agent leads. */
  private reads?: RolloutView;
  /** A change was heard while no pause was under way: the next pause is skipped. */
  private dirty = false;
  private lastResync = 0;
  /** Rollouts whose last round failed (said once per streak). */
  private readonly failingRollouts = new Set<string>();
  /** Creates the API server would not take, backing off (see create-refusals.ts). */
  private readonly refusals = new CreateRefusals();
  /** When each rollout's status was last written (status-pace.ts). */
  private readonly statusWrites = new StatusWrites();

  constructor(
    private readonly api: RolloutApi,
    private readonly fleetApi: FleetApi,
    private readonly opts: CoordinatorOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** The view the rounds read through while leading (default: the API server itself, no watches). */
    private readonly view: (api: RolloutApi) => RolloutView = directView,
  ) {
    this.slots = new SlotClaimer(fleetApi, opts.leaseNamespace, opts.holder, opts.leaseSeconds, clock);
  }

  /** Starts in the background. */
  start(): void {
    this.follower = this.fleetApi.followSlots(
      this.opts.leaseNamespace,
      COORDINATION,
      (leases) => {
        this.view_ = leases;
        this.watchWarned = false;
        // A Lease given back or taken: look now rather than at the next tick.
        this.wake();
      },
      (f) => {
        this.view_ = undefined;
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
    await this.dropReads();
    if (this.held) await this.slots.release(this.held).catch(() => undefined);
    this.held = undefined;
  }

  /** Whether this agent may act as the coordinator now. */
  leading(): boolean {
    return !!this.held && !this.stopping.signal.aborted && this.clock.now() < this.held.renewMs + (this.opts.leaseSeconds * 1000 * 2) / 3;
  }

  /** Something changed: the next round now (or right after the one under way). */
  private wake(): void {
    if (this.nap) this.nap.abort();
    else this.dirty = true;
  }

  private async run(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      let wakeAt: number | undefined;
      let failed = false;
      try {
        await this.elect();
        if (this.leading()) wakeAt = await this.coordinate();
        else await this.dropReads();
        if (this.failing) this.log.info('rollout coordination works again');
        this.failing = false;
      } catch (err) {
        // One line per streak of failures (no RBAC for rollouts, no CRD, the API server away), not one per round.
        if (!this.failing) this.log.warn('rollout coordination round failed; trying again each round, quietly', { error: asAgentError(err).message });
        this.failing = true;
        failed = true;
      }
      if (this.dirty && !failed) {
        this.dirty = false;
        continue;
      }
      this.dirty = false;
      this.nap = new AbortController();
      try {
        await this.clock.sleep(this.pause(wakeAt, failed), AbortSignal.any([this.stopping.signal, this.nap.signal]));
      } catch {
        // woken or stopping
      } finally {
        this.nap = undefined;
      }
    }
  }

  /**
   * How long to wait before the next round when nothing is heard: a coordinator until its next renewal, resync or
   * the time a plan asked for; a follower until the holder's Lease would expire.
   */
  private pause(wakeAt: number | undefined, failed: boolean): number {
    const now = this.clock.now();
    if (this.held) {
      const leaseMs = this.opts.leaseSeconds * 1000;
      const next = Math.min(this.held.renewMs + leaseMs / 3, this.lastResync + this.opts.resyncMs, wakeAt ?? Infinity);
      return Math.max(failed ? this.opts.retryMs : 10, Math.min(next - now, leaseMs / 3));
    }
    const lease = this.view_?.find((l) => l.name === slotName(COORDINATION, 0));
    if (!lease || !this.view_) return this.opts.idleTickMs;
    const expiresIn = lease.renewMs + lease.durationSeconds * 1000 - now;
    return Math.max(50, Math.min(this.opts.idleTickMs, expiresIn + 50));
  }

  /** The view the rounds read through, started when this agent began to lead. */
  private readsNow(): RolloutView {
    if (!this.reads) {
      this.reads = this.view(this.api);
      this.reads.onChange(() => this.wake());
      this.lastResync = this.clock.now();
    }
    return this.reads;
  }

  /** Not leading (or stopping): the watches go; a later lead starts from fresh lists. */
  private async dropReads(): Promise<void> {
    const r = this.reads;
    this.reads = undefined;
    await r?.stop().catch(() => undefined);
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
    const seen = this.view_;
    const lease = seen?.find((l) => l.name === slotName(COORDINATION, 0));
    if (seen && lease && !slotFree(lease, now) && lease.holder !== this.opts.holder) return;
    this.held = await this.slots.tryAcquire(COORDINATION, 1, seen);
    if (this.held) this.log.info('coordinating rollouts: this agent holds the Lease', { lease: slotName(COORDINATION, 0), namespace: this.opts.leaseNamespace, holder: this.opts.holder });
  }

  /** One round over every rollout; answers when a plan asked to look again (ms since the epoch). */
  private async coordinate(): Promise<number | undefined> {
    const reads = this.readsNow();
    const resync = this.clock.now() - this.lastResync >= this.opts.resyncMs;
    if (resync) this.lastResync = this.clock.now();
    reads.fresh(resync);
    try {
      const rollouts = await reads.listRollouts(this.opts.namespace);
      const uids = new Set(rollouts.map((r) => r.metadata.uid ?? ''));
      this.refusals.keepOnly(uids);
      this.statusWrites.keepOnly(uids);
      let wakeAt: number | undefined;
      for (const r of rollouts) {
        if (!this.leading()) break;
        try {
          const plan = await reconcileRollout({ api: reads, deployments: this.opts.deployments, node: this.opts.node, nowMs: () => this.clock.now(), leading: () => this.leading(), log: this.log, refusals: this.refusals, statusWrites: this.statusWrites }, r, rollouts);
          if (plan.wakeAtMs !== undefined) wakeAt = Math.min(wakeAt ?? Infinity, plan.wakeAtMs);
          this.failingRollouts.delete(r.metadata.uid ?? '');
        } catch (err) {
          // A write that lost a race (409: the rollout changed meanwhile) is done again once its watch has the change.
          const conflict = AgentError.is(err, 'Aborted');
          const level = conflict || this.failingRollouts.has(r.metadata.uid ?? '') ? 'debug' : 'warn';
          if (!conflict) this.failingRollouts.add(r.metadata.uid ?? '');
          this.log.log(level, 'rollout round failed; trying again', { rollout: `${r.metadata.namespace}/${r.metadata.name}`, error: asAgentError(err).message });
          wakeAt = Math.min(wakeAt ?? Infinity, this.clock.now() + this.opts.retryMs);
        }
      }
      return wakeAt;
    } finally {
      reads.fresh(false);
      reads.sweep();
    }
  }
}
