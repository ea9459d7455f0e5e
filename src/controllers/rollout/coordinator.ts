// The rollout coordinator inside every agent of the DaemonSet. One agent at a time leads (k8s/lease-election.ts:
// the Lease `inplace-rollouts-slot-0`, held by node name and agent id, watched so a given-back Lease is taken at
// once) and plans every InPlaceRollout; the pod updates it starts are ContainerRestarts, which each node's agent
// runs as ever. Nothing else is handed over: every round reads the cluster again (see reconcile.ts).
//
// While it leads, the coordinator reads through watches (rollout-cache.ts, started when it takes the Lease and
// stopped when it loses it, so a new coordinator begins from fresh lists) and runs a round on every change they
// hear, when a plan says it must look again (a pod's minReadySeconds running out), and every resyncMs with every
// read sent to the API server, as a safety net for a watch that missed something.
import type { Clock } from '../../clock.js';
import { asAgentError } from '../../errors.js';
import { isConflict } from '../../k8s/api-error.js';
import type { Logger } from '../../log.js';
import { LeaseElection, type LeaseApi } from '../../k8s/lease-election.js';
import { CreateRefusals } from './create-refusals.js';
import { reconcileRollout } from './reconcile.js';
import type { RolloutApi } from './rollout-api.js';
import type { DeploymentApi } from './workloads/deployment-api.js';
import { directView, type RolloutView } from './rollout-cache.js';
import { StatusWrites } from './status-pace.js';

/** The election's name; its Lease (the name agents of earlier versions used, so that both agree during an upgrade). */
export const COORDINATION = 'inplace-rollouts';
export const COORDINATION_LEASE = 'inplace-rollouts-slot-0';

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
  private readonly election: LeaseElection;
  private loop?: Promise<void>;
  private nap?: AbortController;
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
    lease: LeaseApi,
    private readonly opts: CoordinatorOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** The view the rounds read through while leading (default: the API server itself, no watches). */
    private readonly view: (api: RolloutApi) => RolloutView = directView,
  ) {
    // A Lease given back or taken (seen through its watch): look now rather than at the next tick.
    this.election = new LeaseElection(lease, { holder: opts.holder, leaseSeconds: opts.leaseSeconds, what: 'rollouts', watch: true }, clock, log, () => this.wake());
  }

  /** Starts in the background. */
  start(): void {
    this.election.start();
    this.loop ??= this.run();
  }

  /** Stops; gives the Lease back so that another agent takes over at once. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.nap?.abort();
    await this.loop;
    await this.dropReads();
    await this.election.stop();
  }

  /** Whether this agent may act as the coordinator now. */
  leading(): boolean {
    return !this.stopping.signal.aborted && this.election.leading();
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
        await this.election.elect();
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
    const renewAt = this.election.renewDueMs();
    if (renewAt === undefined) return this.election.followerPauseMs(this.opts.idleTickMs);
    const leaseMs = this.opts.leaseSeconds * 1000;
    const next = Math.min(renewAt, this.lastResync + this.opts.resyncMs, wakeAt ?? Infinity);
    return Math.max(failed ? this.opts.retryMs : 10, Math.min(next - this.clock.now(), leaseMs / 3));
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
          const conflict = isConflict(err);
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
