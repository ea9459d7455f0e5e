// The one way the agent follows the API server: a list, then a watch from the list's resourceVersion (the
// client's ListWatch, which keeps the cache and lists again by itself after 410 Gone), kept alive here. Every
// other failure ends the client's watch; the follower starts it again after the one back-off (src/backoff.ts),
// on the injected clock, with one pending restart at a time however many ways the failure was reported. A
// restart watches on from the last resourceVersion seen, so nothing that happened meanwhile is missed. An
// answer that will not change by retrying soon (403: not permitted; 404: the resource is not served, e.g. its
// CRD is not installed) is retried at a long interval instead.
//
// Callers hear of each object as the client takes it in (add, update, delete), and of the whole cache (changed)
// only once a list has succeeded, after each batch of changes: never an empty list made up from a failed one,
// nor a list handed on item by item while it is being taken in. Each watch request has a deadline
// (watch-deadline.ts): a stream gone silent ends as a failure and is followed again like any other.
import { ListWatch, Watch, type KubeConfig, type KubernetesListObject, type KubernetesObject } from './client.js';
import { Backoff } from '../backoff.js';
import { apiStatusCode } from './api-error.js';
import type { Clock } from '../clock.js';
import { watchWithDeadline, type WatchDeadline, type WatchSource } from './watch-deadline.js';

/** Why the follow failed, and when it is tried again. */
export interface FollowFailure {
  error: unknown;
  /** The HTTP status, 0 when the failure was not an HTTP answer. */
  status: number;
  /** 403 or 404: retrying soon will not help (permissions or an absent CRD). */
  denied: boolean;
  /** Consecutive failures, this one included. */
  failures: number;
  retryInMs: number;
}

export type { WatchSource } from './watch-deadline.js';

/** What a follower runs on. */
export interface FollowerDeps {
  watch: WatchSource;
  /** The restarts wait on it. */
  clock: Clock;
  /** Source of the back-off's jitter, in [0, 1) (default Math.random). */
  random?: () => number;
}

/** The deps of a follower of the API server of kc. */
export function followerDeps(kc: KubeConfig, clock: Clock, random?: () => number): FollowerDeps {
  return { watch: new Watch(kc), clock, random };
}

/** What is followed, and the timing of the restarts. */
export interface FollowSpec<T extends KubernetesObject> {
  /** The collection's path, e.g. /api/v1/pods. */
  path: string;
  /** Lists the collection (with the same selectors as below). */
  list: () => Promise<KubernetesListObject<T>>;
  /** Only the objects with these labels. */
  labelSelector?: string;
  /** Only the objects whose fields match, e.g. spec.nodeName=NODE. */
  fieldSelector?: string;
  /** First delay after a failure, ms (default 1000), doubling up to maxBackoffMs (default 30000). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Delay before trying again after a 403 or 404 (default 5 min). */
  deniedRetryMs?: number;
  /** Each watch request's deadline (default DEFAULT_WATCH_DEADLINE: 5 min asked of the server, 30 s of grace). */
  watchDeadline?: WatchDeadline;
}

/** Where a follower reports; every callback is optional. */
export interface FollowHandlers<T> {
  /** An object seen for the first time (in a list or through the watch). */
  add?: (obj: T) => void;
  /** A new version of an object already seen. */
  update?: (obj: T) => void;
  /** An object gone (deleted, or absent from a later list). */
  delete?: (obj: T) => void;
  /** Every object, after each list that succeeded and after each batch of changes since the first one. */
  changed?: (items: T[]) => void;
  /** Each failure, with its retry delay. */
  failed?: (f: FollowFailure) => void;
}

/** A running follow. */
export interface ListFollower {
  stop(): Promise<void>;
}

/** Defaults of FollowSpec's timing. */
const DEFAULT_INITIAL_BACKOFF_MS = 1000;
const DEFAULT_MAX_BACKOFF_MS = 30_000;
const DEFAULT_DENIED_RETRY_MS = 5 * 60_000;

/** Follows one collection until stopped; the cache is readable at any time. */
export class Follower<T extends KubernetesObject> implements ListFollower {
  private readonly informer: ListWatch<T>;
  private readonly backoff: Backoff;
  private readonly stopping = new AbortController();
  private failures = 0;
  /** A restart is pending: further reports of the same failure are not counted again. */
  private restarting = false;
  /** A list has succeeded: the cache is the server's view (a later failed list leaves it as it was). */
  private listed = false;
  private flushing = false;
  private readonly firstSync: Promise<void>;
  private synced: () => void = () => undefined;

  constructor(
    private readonly d: FollowerDeps,
    private readonly spec: FollowSpec<T>,
    private readonly on: FollowHandlers<T> = {},
  ) {
    this.backoff = new Backoff(d.clock, { initialMs: spec.initialBackoffMs ?? DEFAULT_INITIAL_BACKOFF_MS, maxMs: spec.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS, random: d.random });
    this.firstSync = new Promise((resolve) => (this.synced = resolve));
    const list = async () => {
      const r = await spec.list();
      this.failures = 0;
      this.listed = true;
      this.schedule();
      return r;
    };
    const watch = watchWithDeadline(d.watch, d.clock, spec.watchDeadline);
    this.informer = new ListWatch<T>(spec.path, watch as Watch, list, false, spec.labelSelector, spec.fieldSelector);
    this.informer.on('add', (o) => this.heard(o, this.on.add));
    this.informer.on('update', (o) => this.heard(o, this.on.update));
    this.informer.on('delete', (o) => this.heard(o, this.on.delete));
    this.informer.on('error', (err: unknown) => this.restartLater(err));
  }

  /** Starts following (in the background; failures are retried until stop()). */
  start(): this {
    this.run();
    return this;
  }

  /** Resolves once the first list is in. */
  whenSynced(): Promise<void> {
    return this.firstSync;
  }

  /** Whether a list has succeeded. */
  hasSynced(): boolean {
    return this.listed;
  }

  /** Every object known, as last listed or watched. */
  list(): T[] {
    return [...this.informer.list()];
  }

  /** The object namespace/name (name alone for a cluster-scoped kind), when known. */
  get(name: string, namespace?: string): T | undefined {
    return this.informer.get(name, namespace);
  }

  /** Stops following; a pending restart is cancelled. Idempotent. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.informer.stop();
  }

  private heard(obj: T, handler: ((o: T) => void) | undefined): void {
    if (this.stopping.signal.aborted) return;
    this.failures = 0;
    handler?.(obj);
    this.schedule();
  }

  /**
   * Tells the caller of the whole cache once the batch under way is taken in: the client takes a list in
   * synchronously once it has it, so a macrotask later the cache holds all of it.
   */
  private schedule(): void {
    if (!this.listed || this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      if (this.stopping.signal.aborted) return;
      this.synced();
      this.on.changed?.(this.list());
    });
  }

  private run(): void {
    if (this.stopping.signal.aborted) return;
    // A failed list is reported through 'error' and still ends start() normally.
    this.informer.start().catch((err: unknown) => this.restartLater(err));
  }

  private restartLater(error: unknown): void {
    if (this.stopping.signal.aborted || this.restarting) return;
    this.restarting = true;
    this.failures++;
    const status = apiStatusCode(error) ?? 0;
    const denied = status === 403 || status === 404;
    const retryInMs = denied ? (this.spec.deniedRetryMs ?? DEFAULT_DENIED_RETRY_MS) : this.backoff.delay(this.failures);
    this.on.failed?.({ error, status, denied, failures: this.failures, retryInMs });
    this.d.clock.sleep(retryInMs, this.stopping.signal).then(
      async () => {
        await this.informer.stop();
        this.restarting = false;
        this.run();
      },
      () => undefined, // stopped
    );
  }
}

/**
 * Lists the objects of spec.path, then watches them; onList gets every object after each successful list and
 * each batch of changes; onError gets each failure with its retry delay.
 */
export function followList<T extends KubernetesObject>(d: FollowerDeps, spec: FollowSpec<T>, onList: (items: T[]) => void, onError: (f: FollowFailure) => void): ListFollower {
  return new Follower<T>(d, spec, { changed: onList, failed: onError }).start();
}
