// One leader among the agents of the DaemonSet, by one coordination.k8s.io Lease: the rollout coordinator and the
// SidecarSet coordinator each run one. The Lease is written with optimistic concurrency (create fails with 409
// when it exists; replace fails with 409 when someone else wrote first), so races are decided by the API server.
//
//   follower --Lease free or expired--> take it --won--> leader --renewal lost / stopping--> follower
//
// A leader acts only while its last renewal is younger than two thirds of the lease, and renews once a third has
// passed; a follower takes the Lease only once it has expired (or was given back), so two agents never lead at
// once as long as their clocks agree within a third of the lease.
import type { Clock } from '../clock.js';
import { asAgentError } from '../errors.js';
import type { Logger } from '../log.js';
import { apiStatusCode, isConflict } from './api-error.js';
import type { FollowFailure } from './list-follower.js';

/** The Lease as the election sees it. */
export interface ElectionLease {
  name: string;
  /** Empty when given back. */
  holder: string;
  /** ms since the epoch of the last renewal (or acquisition). */
  renewMs: number;
  acquireMs: number;
  durationSeconds: number;
  resourceVersion: string;
}

/** A running watch of the Lease. */
export interface LeaseWatch {
  stop(): Promise<void>;
}

/** The one Lease an election runs on. Every method is one API request; failures throw AgentError. */
export interface LeaseApi {
  /** The Lease's name (for logs). */
  readonly name: string;
  /** The Lease; undefined when there is none. */
  get(): Promise<ElectionLease | undefined>;
  /** Reads, then watches the Lease, calling onLease after each change (undefined: there is none); restarts after failures. */
  follow(onLease: (lease: ElectionLease | undefined) => void, onError: (f: FollowFailure) => void): LeaseWatch;
  /** Creates the Lease held by holder; throws 409 when it exists. */
  create(holder: string, durationSeconds: number, nowMs: number): Promise<ElectionLease>;
  /** Writes holder and renewal time over the Lease at its resourceVersion; throws 409 (stale) or 404 (gone). */
  update(lease: ElectionLease, holder: string, nowMs: number): Promise<ElectionLease>;
  /** Deletes the Lease if it is still at its resourceVersion; true when it is gone, false when it moved on. */
  delete(lease: ElectionLease): Promise<boolean>;
}

/** Settings of one election. */
export interface ElectionOptions {
  /** This agent's identity as the holder (node name and agent id). */
  holder: string;
  leaseSeconds: number;
  /** What leading means, for the log lines ("rollouts", "SidecarSets"). */
  what: string;
  /** Watch the Lease, so a given-back or expired Lease is seen at once (default: read it at each elect()). */
  watch?: boolean;
}

/** True when nobody holds the Lease any more: given back, or not renewed within its duration. */
export function leaseFree(l: ElectionLease, nowMs: number): boolean {
  return l.holder === '' || l.renewMs + l.durationSeconds * 1000 < nowMs;
}

/** One agent's part in the election: leading(), elect() each round, start() and stop(). */
export class LeaseElection {
  private held?: ElectionLease;
  /** The Lease as the watch last showed it: null when it showed none, undefined when not watching (or failing). */
  private seen?: ElectionLease | null;
  private watch?: LeaseWatch;
  private watchWarned = false;
  private stopped = false;

  constructor(
    private readonly api: LeaseApi,
    private readonly opts: ElectionOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Called when the watch shows a change (a Lease given back or taken), so the owner looks at once. */
    private readonly onChange: () => void = () => undefined,
  ) {}

  /** Starts the watch of the Lease (when asked for). */
  start(): void {
    if (!this.opts.watch || this.watch) return;
    this.watch = this.api.follow(
      (lease) => {
        this.seen = lease ?? null;
        this.watchWarned = false;
        this.onChange();
      },
      (f) => {
        this.seen = undefined;
        if (!this.watchWarned) this.log.warn(`watch of the ${this.opts.what} coordination Lease failed; reading it each round meanwhile`, { error: asAgentError(f.error).message, retryInMs: f.retryInMs });
        this.watchWarned = true;
      },
    );
  }

  /** Stops the watch and gives the Lease back, so that another agent takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.watch?.stop().catch(() => undefined);
    if (this.held) await this.release(this.held).catch(() => undefined);
    this.held = undefined;
  }

  /** Whether this agent may act as the leader now. */
  leading(): boolean {
    return !!this.held && !this.stopped && this.clock.now() < this.held.renewMs + (this.opts.leaseSeconds * 1000 * 2) / 3;
  }

  /** When the held Lease is next renewed (ms since the epoch); undefined when not holding it. */
  renewDueMs(): number | undefined {
    return this.held ? this.held.renewMs + (this.opts.leaseSeconds * 1000) / 3 : undefined;
  }

  /** A follower's wait before it looks again: until the holder's Lease would expire, at most idleMs. */
  followerPauseMs(idleMs: number): number {
    const lease = this.seen;
    if (!lease) return idleMs;
    const expiresIn = lease.renewMs + lease.durationSeconds * 1000 - this.clock.now();
    return Math.max(50, Math.min(idleMs, expiresIn + 50));
  }

  /** Renews the held Lease once a third of it has passed; takes it when it is free or expired. */
  async elect(): Promise<void> {
    if (this.stopped) return;
    const now = this.clock.now();
    if (this.held) {
      if (now - this.held.renewMs < (this.opts.leaseSeconds * 1000) / 3) return;
      const renewed = await this.renew(this.held);
      if (!renewed) this.log.info(`no longer coordinating ${this.opts.what}: the Lease was taken`, { lease: this.api.name });
      this.held = renewed;
      return;
    }
    const lease = this.seen === undefined ? await this.api.get() : (this.seen ?? undefined);
    if (lease && lease.holder !== this.opts.holder && !leaseFree(lease, now)) return;
    this.held = await this.take(lease, now);
    if (this.held) this.log.info(`coordinating ${this.opts.what}: this agent holds the Lease`, { lease: this.api.name, holder: this.opts.holder });
  }

  /** One write: the Lease created, or written over when it is free, expired or already this agent's. Undefined when another was first. */
  private async take(lease: ElectionLease | undefined, now: number): Promise<ElectionLease | undefined> {
    try {
      return lease ? await this.api.update(lease, this.opts.holder, now) : await this.api.create(this.opts.holder, this.opts.leaseSeconds, now);
    } catch (err) {
      if (isConflict(err) || apiStatusCode(err) === 404) return undefined;
      throw err;
    }
  }

  /** Renews; undefined when the Lease was lost (someone took it after it expired). */
  private async renew(l: ElectionLease): Promise<ElectionLease | undefined> {
    try {
      return await this.api.update(l, this.opts.holder, this.clock.now());
    } catch (err) {
      if (!isConflict(err) && apiStatusCode(err) !== 404) throw err;
      const now = await this.api.get();
      return now && now.holder === this.opts.holder ? this.api.update(now, this.opts.holder, this.clock.now()).catch(() => undefined) : undefined;
    }
  }

  /** Deletes the Lease if this agent still holds it (read again when it moved on). */
  private async release(l: ElectionLease): Promise<void> {
    for (let lease: ElectionLease | undefined = l, i = 0; lease && i < 3; i++) {
      if (await this.api.delete(lease)) return;
      const now = await this.api.get();
      lease = now && now.holder === this.opts.holder ? now : undefined;
    }
  }
}
