// What an elected coordinator reads, kept by watches: one Follower (k8s/list-follower.ts) per thing a round asks
// for, started the first time a round asks and stopped when no round has asked for a while. Every change any of
// them hears wakes the coordinator (onChange), so it acts on change instead of on a timer.
//
// Reads come from a watch's cache once it has listed and while it is healthy; otherwise (the first round, a
// failed watch) straight from the API server, as do the coordinator's slow resyncs (fresh()). The coordinator
// also reads its own writes: each object a write returns is laid over the cache until the watch has caught up
// with it (or a short time has passed), so a round right after a ContainerRestart was created counts it in
// flight even before its watch event arrives, and the budget is spent once. A controller's cache (the rollout's,
// the SidecarSet's) names its reads and writes and hands them to this one.
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { KubernetesObject } from '../../k8s/client.js';
import { Follower, type FollowerDeps, type FollowSpec } from '../../k8s/list-follower.js';

/** A watch no round has read from for this long is stopped (ms). */
export const FEED_IDLE_MS = 120_000;
/** An object laid over a watch's cache after a write stays at most this long, whatever the watch says (ms). */
export const OVERLAY_MS = 30_000;
/** Back-off of the watches after a failure (ms). */
const FOLLOW_BACKOFF = { initialBackoffMs: 250, maxBackoffMs: 5000, deniedRetryMs: 60_000 };

/** An object as listed or watched (the fields the cache reads). */
export type Obj = KubernetesObject & { metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string> } };

/** What a coordinator's rounds read through while it leads: watches, or the API server itself. */
export interface CoordinatorView {
  /** fn is called after each change heard (never, without watches). */
  onChange(fn: () => void): void;
  /** Until the next call, whether every read goes to the API server. */
  fresh(direct: boolean): void;
  /** Lets go of what no round needs any more. */
  sweep(): void;
  stop(): Promise<void>;
}

/** The API server itself as a view: every read is a request, and no change is heard (rounds run on the resync). */
export function directView<A extends object>(api: A): A & CoordinatorView {
  return Object.assign(Object.create(api) as A, { onChange: () => undefined, fresh: () => undefined, sweep: () => undefined, stop: async () => undefined });
}

/** One watch, and whether it can be read from. */
interface Feed {
  follower: Follower<Obj>;
  /** Listed, and heard from since its last failure (a restarted watch goes on from the last version seen, with no list). */
  ok: boolean;
  usedAt: number;
}

/** An object this agent wrote, laid over the watch's cache; deleted: it is gone (as far as this agent knows). */
interface Laid {
  obj?: Obj;
  deleted: boolean;
  resourceVersion?: string;
  at: number;
}

/** namespace/name: how the cache keys an object (a cluster-scoped one is `/name`). */
export const keyOf = (o: Obj) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
/** Whether o carries every label of sel. */
export const hasLabels = (o: Obj, sel: Record<string, string>) => Object.entries(sel).every(([k, v]) => o.metadata?.labels?.[k] === v);

/** Whether resourceVersion a is at or after b (numbers, as the API server's are; unknown: no). */
function atOrAfter(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) >= BigInt(b);
}

/** Watches started on first read, with this agent's own writes laid over them. */
export class WatchCache implements CoordinatorView {
  private readonly feeds = new Map<string, Feed>();
  /** Per kind (the caller's names), by namespace/name. */
  private readonly laid = new Map<string, Map<string, Laid>>();
  private readonly listeners = new Set<() => void>();
  private direct = false;
  private warned = new Set<string>();

  constructor(
    /** The watches' requests and clock. */
    private readonly follow: FollowerDeps,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Who reads through it, for the log ("the rollout coordinator"). */
    private readonly who: string,
  ) {}

  /** fn is called after each change any watch heard. */
  onChange(fn: () => void): void {
    this.listeners.add(fn);
  }

  /** Until the next call, every read goes to the API server (the coordinator's resync). */
  fresh(direct: boolean): void {
    this.direct = direct;
  }

  /** Stops the watches no round read from within FEED_IDLE_MS, and forgets overlays older than OVERLAY_MS. */
  sweep(): void {
    const now = this.clock.now();
    for (const [key, f] of this.feeds) {
      if (now - f.usedAt < FEED_IDLE_MS) continue;
      this.feeds.delete(key);
      void f.follower.stop().catch(() => undefined);
    }
    for (const m of this.laid.values()) for (const [k, l] of m) if (now - l.at >= OVERLAY_MS) m.delete(k);
  }

  /** Stops every watch. */
  async stop(): Promise<void> {
    const feeds = [...this.feeds.values()];
    this.feeds.clear();
    this.listeners.clear();
    await Promise.all(feeds.map((f) => f.follower.stop().catch(() => undefined)));
  }

  /** Lays what a write returned over the cache of its kind; answers obj. */
  lay<T>(kind: string, obj: T): T {
    const o = obj as Obj;
    if (o?.metadata) this.kind(kind).set(keyOf(o), { obj: o, deleted: false, resourceVersion: o.metadata.resourceVersion, at: this.clock.now() });
    return obj;
  }

  /** Notes that this agent deleted the object at key (namespace/name) of kind. */
  gone(kind: string, key: string): void {
    this.kind(kind).set(key, { deleted: true, at: this.clock.now() });
  }

  /** The items with this agent's own writes of kind laid over them (those that match). */
  merged(kind: string, items: Obj[], matches: (o: Obj) => boolean): Obj[] {
    const m = this.laid.get(kind);
    if (!m || m.size === 0) return items;
    const byKey = new Map(items.map((o) => [keyOf(o), o]));
    for (const [key, l] of m) {
      const cur = byKey.get(key);
      if (cur && atOrAfter(cur.metadata?.resourceVersion, l.resourceVersion)) continue;
      if (l.deleted) byKey.delete(key);
      else if (l.obj && matches(l.obj)) byKey.set(key, l.obj);
    }
    return [...byKey.values()];
  }

  /** The items of the feed `key` (of kind), started on first use; from direct() while it cannot be read from. */
  async read(kind: string, key: string, spec: FollowSpec<Obj>, direct: () => Promise<Obj[]>): Promise<Obj[]> {
    let f = this.feeds.get(key);
    if (!f) {
      f = this.feed(kind, key, spec);
      this.feeds.set(key, f);
      f.follower.start();
    }
    f.usedAt = this.clock.now();
    if (!this.direct && f.ok && f.follower.hasSynced()) return f.follower.list();
    return direct();
  }

  private feed(kind: string, key: string, spec: FollowSpec<Obj>): Feed {
    const feed: Feed = {
      ok: false,
      usedAt: this.clock.now(),
      follower: new Follower<Obj>(this.follow, { ...spec, ...FOLLOW_BACKOFF }, {
        add: (o) => this.caughtUp(kind, o, false),
        update: (o) => this.caughtUp(kind, o, false),
        delete: (o) => this.caughtUp(kind, o, true),
        changed: () => {
          feed.ok = true;
          this.warned.delete(key);
          for (const l of this.listeners) l();
        },
        failed: (fl) => {
          feed.ok = false;
          if (this.warned.has(key)) return;
          this.warned.add(key);
          this.log.info(`a watch of ${this.who} failed; reading from the API server meanwhile`, { watch: spec.path, status: fl.status, retryInMs: fl.retryInMs });
        },
      }),
    };
    return feed;
  }

  private kind(kind: string): Map<string, Laid> {
    let m = this.laid.get(kind);
    if (!m) this.laid.set(kind, (m = new Map()));
    return m;
  }

  /**
   * The watch saw obj (or its deletion): an overlay it has caught up with goes. Resource versions are the API
   * server's one sequence, so a version at or after the write's means the watch is past it, whatever the uid; a
   * deletion seen before the write (of an earlier object of that name) is not.
   */
  private caughtUp(kind: string, obj: Obj, deleted: boolean): void {
    const m = this.laid.get(kind);
    const l = m?.get(keyOf(obj));
    if (!l) return;
    if (atOrAfter(obj.metadata?.resourceVersion, l.resourceVersion) || (deleted && l.resourceVersion === undefined)) m?.delete(keyOf(obj));
  }
}
