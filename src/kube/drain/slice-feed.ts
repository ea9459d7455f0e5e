// The EndpointSlices of one namespace, kept current while a drain needs them: from a watch (list, then watch,
// restarted on failure by list-follower) in the agent, or by listing again on each wait where only a KubeApi
// is at hand (unit tests' fakes). Either way a caller waits on the feed, never on a fixed sleep.
import { DiscoveryV1Api, type KubeConfig, type V1EndpointSlice, type V1EndpointSliceList } from '../../k8s/client.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { KubeApi } from '../../k8s/kube-api.js';
import { followerDeps, followList, type ListFollower } from '../../k8s/list-follower.js';

/** The latest EndpointSlices of one namespace. */
export interface SliceFeed {
  /** Resolves once the slices were listed the first time (rejects when that list failed, polled feed only). */
  started: Promise<void>;
  /** The slices as last seen; undefined before the first list answered. */
  current(): V1EndpointSlice[] | undefined;
  /** Resolves at the next change seen, or after ms. */
  changed(ms: number): Promise<void>;
  /** Makes current() up to date (a watch always is; a polled feed lists again). */
  refresh(): Promise<void>;
  /** Calls fn with each new view and when it was seen (clock ms); returns the unsubscribe. */
  onChange(fn: (slices: V1EndpointSlice[], at: number) => void): () => void;
  stop(): Promise<void>;
}

/** Makes a feed of a namespace's slices. */
export type SliceFeedFactory = (namespace: string) => SliceFeed;

/** Listeners and waiters shared by both kinds of feed. */
class FeedBase {
  protected slices: V1EndpointSlice[] | undefined;
  private readonly listeners = new Set<(s: V1EndpointSlice[], at: number) => void>();
  private waiters: (() => void)[] = [];

  constructor(protected readonly clock: Clock) {}

  current(): V1EndpointSlice[] | undefined {
    return this.slices;
  }

  onChange(fn: (slices: V1EndpointSlice[], at: number) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  protected update(items: V1EndpointSlice[]): void {
    this.slices = items;
    const at = this.clock.now();
    for (const fn of this.listeners) fn(items, at);
    const w = this.waiters;
    this.waiters = [];
    for (const wake of w) wake();
  }

  protected nextUpdate(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = new AbortController();
      const wake = () => {
        timer.abort();
        resolve();
      };
      this.waiters.push(wake);
      this.clock.sleep(ms, timer.signal).then(() => {
        this.waiters = this.waiters.filter((w) => w !== wake);
        resolve();
      }, () => undefined);
    });
  }
}

/** A feed from a watch of the namespace's slices (one list, then changes as the API server sends them). */
class WatchedFeed extends FeedBase implements SliceFeed {
  readonly started: Promise<void>;
  private readonly follower: ListFollower;

  constructor(kc: KubeConfig, namespace: string, clock: Clock, log: Logger) {
    super(clock);
    const discovery = kc.makeApiClient(DiscoveryV1Api);
    let first: () => void = () => undefined;
    this.started = new Promise((resolve) => (first = resolve));
    this.follower = followList<V1EndpointSlice>(
      followerDeps(kc, clock),
      {
        path: `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`,
        list: () => discovery.listNamespacedEndpointSlice({ namespace }) as Promise<V1EndpointSliceList>,
        initialBackoffMs: 200,
        maxBackoffMs: 2000,
      },
      (items) => {
        this.update(items);
        first();
      },
      (f) => log.warn('watching EndpointSlices failed; starting again', { namespace, status: f.status, retryInMs: f.retryInMs, error: f.error instanceof Error ? f.error.message : String(f.error) }),
    );
  }

  changed(ms: number): Promise<void> {
    return this.nextUpdate(ms);
  }

  refresh(): Promise<void> {
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return this.follower.stop();
  }
}

/** A feed that lists the slices again each time it is waited on (no watch: for a bare KubeApi). */
class PolledFeed extends FeedBase implements SliceFeed {
  readonly started: Promise<void>;

  constructor(
    private readonly api: KubeApi,
    private readonly namespace: string,
    clock: Clock,
  ) {
    super(clock);
    this.started = this.list();
  }

  private async list(): Promise<void> {
    this.update(await this.api.listEndpointSlices(this.namespace));
  }

  async changed(ms: number): Promise<void> {
    await this.clock.sleep(ms);
    await this.list();
  }

  refresh(): Promise<void> {
    return this.list();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }
}

/** Feeds from watches of the API server (what the agent uses). */
export function watchedSlices(kc: KubeConfig, clock: Clock, log: Logger): SliceFeedFactory {
  return (namespace) => new WatchedFeed(kc, namespace, clock, log);
}

/** Feeds that list through api on each wait (what a strategy built without a KubeConfig uses). */
export function polledSlices(api: KubeApi, clock: Clock): SliceFeedFactory {
  return (namespace) => new PolledFeed(api, namespace, clock);
}
