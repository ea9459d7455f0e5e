// The loop of an elected coordinator inside every agent of the DaemonSet: one agent at a time leads
// (k8s/lease-election.ts, its Lease watched so a given-back Lease is taken at once) and runs rounds. While it
// leads it reads through a view (watch-cache.ts, started when it takes the Lease and stopped when it loses it, so
// a new coordinator begins from fresh lists) and runs a round on every change the view hears, when a round asks
// to look again (wakeAt), and every resyncMs with every read sent to the API server, as a safety net for a watch
// that missed something. The rollout and the SidecarSet coordinators are this loop and their own round.
import type { Clock } from '../../clock.js';
import { asAgentError } from '../../errors.js';
import { isConflict } from '../../k8s/api-error.js';
import type { Logger } from '../../log.js';
import { LeaseElection, type LeaseApi } from '../../k8s/lease-election.js';
import { CreateRefusals } from './create-refusals.js';
import { StatusWrites } from './status-pace.js';
import type { CoordinatorView } from './watch-cache.js';

/** Settings of the loop. */
export interface ElectedOptions {
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
}

/** Defaults of the loop for a real agent. */
export const ELECTED_DEFAULTS = { leaseSeconds: 15, resyncMs: 10_000, idleTickMs: 5000, retryMs: 1000 };

/** Takes part in the election and, while holding the Lease, runs round() through the view V. */
export abstract class ElectedCoordinator<V extends CoordinatorView> {
  private readonly stopping = new AbortController();
  private readonly election: LeaseElection;
  private loop?: Promise<void>;
  private nap?: AbortController;
  private failing = false;
  /** What the rounds read through while this agent leads. */
  private reads?: V;
  /** A change was heard while no pause was under way: the next pause is skipped. */
  private dirty = false;
  private lastResync = 0;
  /** Objects whose last round failed (said once per streak). */
  private readonly failingObjects = new Set<string>();
  /** Creates whose name was taken or refused, backing off (create-refusals.ts), kept across rounds. */
  protected readonly refusals = new CreateRefusals();
  /** When each object's status was last written (status-pace.ts), kept across rounds. */
  protected readonly statusWrites = new StatusWrites();

  constructor(
    lease: LeaseApi,
    private readonly elected: ElectedOptions,
    protected readonly clock: Clock,
    protected readonly log: Logger,
    /** What is coordinated, for the log ("rollouts"). */
    private readonly what: string,
    /** The view the rounds read through while leading. */
    private readonly view: () => V,
  ) {
    // A Lease given back or taken (seen through its watch): look now rather than at the next tick.
    this.election = new LeaseElection(lease, { holder: elected.holder, leaseSeconds: elected.leaseSeconds, what, watch: true }, clock, log, () => this.wake());
  }

  /** One round over everything coordinated; answers when it asked to look again (ms since the epoch). */
  protected abstract round(reads: V): Promise<number | undefined>;

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

  /**
   * Runs fn on each object, by uid, while this agent leads, and answers the earliest time one asked to look again;
   * what is kept for objects no longer listed (refusals, status writes) is forgotten.
   * An object's failed round is said once per streak (a write that lost a race, 409, only in debug: it is done
   * again once the watch has the change) and asks for a round after retryMs.
   */
  protected async eachObject<T extends { metadata: { name: string; namespace?: string; uid?: string } }>(objects: T[], fn: (o: T) => Promise<number | undefined>): Promise<number | undefined> {
    const uids = new Set(objects.map((o) => o.metadata.uid ?? ''));
    for (const uid of this.failingObjects) if (!uids.has(uid)) this.failingObjects.delete(uid);
    this.refusals.keepOnly(uids);
    this.statusWrites.keepOnly(uids);
    let wakeAt: number | undefined;
    for (const o of objects) {
      if (!this.leading()) break;
      const uid = o.metadata.uid ?? '';
      try {
        const at = await fn(o);
        if (at !== undefined) wakeAt = Math.min(wakeAt ?? Infinity, at);
        this.failingObjects.delete(uid);
      } catch (err) {
        const conflict = isConflict(err);
        const level = conflict || this.failingObjects.has(uid) ? 'debug' : 'warn';
        if (!conflict) this.failingObjects.add(uid);
        const name = o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
        this.log.log(level, `a round of ${this.what} failed; trying again`, { object: name, error: asAgentError(err).message });
        wakeAt = Math.min(wakeAt ?? Infinity, this.clock.now() + this.elected.retryMs);
      }
    }
    return wakeAt;
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
        if (this.failing) this.log.info(`${this.what} coordination works again`);
        this.failing = false;
      } catch (err) {
        // One line per streak of failures (no RBAC, no CRD, the API server away), not one per round.
        if (!this.failing) this.log.warn(`${this.what} coordination round failed; trying again each round, quietly`, { error: asAgentError(err).message });
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
   * the time a round asked for; a follower until the holder's Lease would expire.
   */
  private pause(wakeAt: number | undefined, failed: boolean): number {
    const renewAt = this.election.renewDueMs();
    if (renewAt === undefined) return this.election.followerPauseMs(this.elected.idleTickMs);
    const leaseMs = this.elected.leaseSeconds * 1000;
    const next = Math.min(renewAt, this.lastResync + this.elected.resyncMs, wakeAt ?? Infinity);
    return Math.max(failed ? this.elected.retryMs : 10, Math.min(next - this.clock.now(), leaseMs / 3));
  }

  /** Not leading (or stopping): the watches go; a later lead starts from fresh lists. */
  private async dropReads(): Promise<void> {
    const r = this.reads;
    this.reads = undefined;
    await r?.stop().catch(() => undefined);
  }

  /** One round through the view (started when this agent began to lead), every read fresh at each resync. */
  private async coordinate(): Promise<number | undefined> {
    if (!this.reads) {
      this.reads = this.view();
      this.reads.onChange(() => this.wake());
      this.lastResync = this.clock.now();
    }
    const reads = this.reads;
    const resync = this.clock.now() - this.lastResync >= this.elected.resyncMs;
    if (resync) this.lastResync = this.clock.now();
    reads.fresh(resync);
    try {
      return await this.round(reads);
    } finally {
      reads.fresh(false);
      reads.sweep();
    }
  }
}
