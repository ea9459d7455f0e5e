// The drain of one pod's address around a restart, from "condition False" to "ready endpoint again":
//
//   drain():      the slices hold the address as ready --(watch)--> none does (seen at T)
//                 --> the node's data plane applied it (kube-proxy synced after T and minSyncPeriod passed,
//                     or the settle time) ........................... all within the operation's drain bound
//   (the caller runs the preStop, stops or patches, and verifies the next instance)
//   readyAgain(): the slices hold the address as ready again (recorded), and the window in which a Service that
//                 held it had no ready endpoint at all is measured (a pod that was its only endpoint).
//
// The slice feed of a drain stays open from drain() to readyAgain() (or release()), so that window is seen
// from the watch's own events.
import type { V1EndpointSlice } from '../../k8s/client.js';
import type { Clock } from '../../clock.js';
import { formatDuration } from '../../duration.js';
import { DrainParts, type DrainPart } from '../drain-metrics.js';
import type { DataPlane } from './data-plane.js';
import { readyCounts, readyOthers, servicesListing, slicesHolding, slicesListing, type PodAddress } from './endpoints.js';
import type { SliceFeed, SliceFeedFactory } from './slice-feed.js';

/** What a drain did, for the operation's record. */
export interface DrainRecord {
  /** False when a bound cut a wait short. */
  drained: boolean;
  waitedMs: number;
  /** What was waited on and for how long. */
  detail: string;
  /** The parts waited for (slices, then the data plane), each with how long and whether it completed. */
  parts: { part: DrainPart; ms: number; done: boolean }[];
}

/** What the way back showed. */
export interface ReadyRecord {
  /** True when the address was seen ready again within the bound. */
  ready: boolean;
  waitedMs: number;
  /** Longest time a Service that held the address had no ready endpoint (undefined: it always had one, or unknown). */
  unservedMs?: number;
  /** The Services that had none meanwhile. */
  unserved: string[];
  detail: string;
}

/** Slices are looked at again at least this often while waiting (the feed wakes the wait on each change). */
const RECHECK_MS = 100;

/** One drained address: its feed, and the Services it belonged to with their windows without ready endpoints. */
class Session {
  services: string[] = [];
  /** The Services were taken from a first view (track() ran). */
  tracked = false;
  private readonly zeroSince = new Map<string, number>();
  private readonly windows = new Map<string, number>();
  private readonly unsubscribe: () => void;

  constructor(readonly feed: SliceFeed) {
    this.unsubscribe = feed.onChange((slices, at) => this.seen(slices, at));
  }

  /** Notes the Services of the address from the first view (later views keep them). */
  track(services: string[], slices: V1EndpointSlice[], at: number): void {
    this.services = services;
    this.tracked = true;
    this.seen(slices, at);
  }

  private seen(slices: V1EndpointSlice[], at: number): void {
    for (const [svc, n] of readyCounts(slices, this.services)) {
      const since = this.zeroSince.get(svc);
      if (n === 0 && since === undefined) this.zeroSince.set(svc, at);
      if (n > 0 && since !== undefined) {
        this.windows.set(svc, Math.max(this.windows.get(svc) ?? 0, at - since));
        this.zeroSince.delete(svc);
      }
    }
  }

  /** The longest window per Service that had one (one still open counts up to now). */
  unserved(now: number): Map<string, number> {
    const out = new Map(this.windows);
    for (const [svc, since] of this.zeroSince) out.set(svc, Math.max(out.get(svc) ?? 0, now - since));
    return out;
  }

  async close(): Promise<void> {
    this.unsubscribe();
    await this.feed.stop();
  }
}

/** Drains addresses and sees them back. */
export class Drainer {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly slices: SliceFeedFactory,
    private readonly dataPlane: DataPlane,
    private readonly clock: Clock,
  ) {}

  /**
   * Waits, at most boundMs, until no slice holds the address as ready and the data plane applied that. The
   * only ready endpoint of its Services is not waited for (there is nowhere else for traffic to go). `key`
   * names the drain for readyAgain() and release() (operation id, then '/').
   */
  async drain(key: string, namespace: string, a: PodAddress, boundMs: number): Promise<DrainRecord> {
    const began = this.clock.now();
    const until = began + boundMs;
    const session = this.session(key, namespace);
    if (boundMs <= 0) {
      void session.feed.started.then(() => this.trackFirst(session, a), () => undefined);
      return { drained: false, waitedMs: 0, detail: 'drain 0: nothing waited for', parts: [] };
    }
    const first = await this.firstView(session, until);
    if (!first) {
      const waited = this.clock.now() - began;
      return { drained: false, waitedMs: waited, detail: `EndpointSlices of ${namespace} not listed within the drain bound`, parts: [{ part: DrainParts.Slices, ms: waited, done: false }] };
    }
    // The first view may come after the condition already took the address out (the feed is opened as it is
    // written): a slice that lists it, ready or not, held it; one that still has it ready is waited for.
    const listed = slicesListing(first, a);
    const held = slicesHolding(first, a);
    const services = this.trackFirst(session, a);
    if (listed.length === 0) return { drained: true, waitedMs: this.clock.now() - began, detail: 'not an endpoint of any EndpointSlice: nothing to drain', parts: [] };
    const others = readyOthers(first, services, a);
    if (services.length > 0 && [...others.values()].every((n) => n === 0)) {
      return { drained: true, waitedMs: this.clock.now() - began, detail: `the only ready endpoint of ${services.join(', ')}: not waited for (nowhere else to send traffic)`, parts: [] };
    }
    // 1. The slices: every one that held the address lets it go.
    let left = held;
    while (left.length > 0) {
      const rest = until - this.clock.now();
      if (rest <= 0) {
        const waited = this.clock.now() - began;
        return { drained: false, waitedMs: waited, detail: `EndpointSlices ${left.join(', ')} still held the address at the drain bound: ${waited} ms`, parts: [{ part: DrainParts.Slices, ms: waited, done: false }] };
      }
      await session.feed.changed(Math.min(RECHECK_MS, rest));
      const now = slicesHolding(session.feed.current() ?? [], a);
      left = left.filter((s) => now.includes(s));
    }
    const seenAt = this.clock.now();
    const slicesMs = seenAt - began;
    // 2. The data plane applies it.
    const dp = await this.dataPlane.wait(seenAt, until, a.ip.includes(':') ? 'IPv6' : 'IPv4');
    return {
      drained: dp.done,
      waitedMs: this.clock.now() - began,
      detail: `EndpointSlices ${listed.join(', ')} let the address go: ${slicesMs} ms; ${dp.detail}`,
      parts: [
        { part: DrainParts.Slices, ms: slicesMs, done: true },
        { part: DrainParts.DataPlane, ms: dp.waitedMs, done: dp.done },
      ],
    };
  }

  /**
   * The Services of which the address is the only ready endpoint, when that holds for every Service that lists
   * it (from the feed's first view, waited for at most boundMs); undefined otherwise.
   */
  async soleOf(key: string, namespace: string, a: PodAddress, boundMs: number): Promise<string[] | undefined> {
    const session = this.session(key, namespace);
    const first = await this.firstView(session, this.clock.now() + boundMs);
    if (!first || slicesHolding(first, a).length === 0) return undefined;
    const services = this.trackFirst(session, a);
    const others = readyOthers(first, services, a);
    return services.length > 0 && [...others.values()].every((n) => n === 0) ? services : undefined;
  }

  /**
   * Opens the feed of a drain (before the condition that takes the address out is written, so that its first
   * view comes as early as can be); a second container of the same operation keeps the feed, and the windows,
   * that the first one opened.
   */
  open(key: string, namespace: string): void {
    this.session(key, namespace);
  }

  private session(key: string, namespace: string): Session {
    let session = this.sessions.get(key);
    if (!session) {
      session = new Session(this.slices(namespace));
      this.sessions.set(key, session);
    }
    return session;
  }

  /**
   * Waits, at most boundMs, until a slice holds the address as ready again, then ends the drain's feed. With
   * no drain of that key open, a feed is opened for the check (no window is measured then).
   */
  async readyAgain(key: string, namespace: string, a: PodAddress, boundMs: number): Promise<ReadyRecord> {
    const began = this.clock.now();
    const until = began + boundMs;
    let session = this.sessions.get(key);
    const measured = session !== undefined;
    if (!session) {
      session = new Session(this.slices(namespace));
      this.sessions.set(key, session);
    }
    try {
      // Drained while no Service listed the address: no slice will hold it again, so there is nothing to wait for.
      if (measured && session.tracked && session.services.length === 0) {
        return { ready: false, waitedMs: 0, unserved: [], detail: 'not an endpoint of any Service: no way back to wait for' };
      }
      let view = await this.firstView(session, until);
      if (view !== undefined && measured) {
        await session.feed.refresh();
        view = session.feed.current();
      }
      while (view !== undefined && slicesHolding(view, a).length === 0 && this.clock.now() < until) {
        await session.feed.changed(Math.min(RECHECK_MS, until - this.clock.now()));
        view = session.feed.current();
      }
      const ready = view !== undefined && slicesHolding(view, a).length > 0;
      const waited = this.clock.now() - began;
      const windows = measured ? session.unserved(this.clock.now()) : new Map<string, number>();
      const unserved = [...windows.keys()];
      const unservedMs = unserved.length > 0 ? Math.max(...windows.values()) : undefined;
      const where = ready ? `a ready endpoint again after ${waited} ms` : `not a ready endpoint again within ${waited} ms`;
      const window = unservedMs !== undefined ? `; ${unserved.join(', ')} had no ready endpoint for ${formatDuration(unservedMs)}` : '';
      return { ready, waitedMs: waited, unservedMs, unserved, detail: `${where}${window}` };
    } finally {
      this.sessions.delete(key);
      await session.close();
    }
  }

  /** Ends every open drain whose key starts with prefix (an operation that ended without its way back). */
  async release(prefix: string): Promise<void> {
    for (const [key, s] of [...this.sessions]) {
      if (!key.startsWith(prefix)) continue;
      this.sessions.delete(key);
      await s.close();
    }
  }

  /** The feed's first view, waited for until `until`; undefined when it did not come. */
  private async firstView(session: Session, until: number): Promise<V1EndpointSlice[] | undefined> {
    const started = session.feed.started.then(() => 'ok' as const, () => 'failed' as const);
    // A feed that has its first view at once is not raced against a timer (a test clock would jump to the bound).
    const quick = await Promise.race([started, new Promise<'pending'>((r) => setImmediate(() => r('pending')))]);
    if (quick !== 'pending') return quick === 'ok' ? session.feed.current() : undefined;
    const timer = new AbortController();
    const late = this.clock.sleep(Math.max(0, until - this.clock.now()), timer.signal).then(
      () => 'late' as const,
      () => 'late' as const,
    );
    const got = await Promise.race([started, late]);
    timer.abort();
    return got === 'ok' ? session.feed.current() : undefined;
  }

  private trackFirst(session: Session, a: PodAddress): string[] {
    if (session.services.length > 0) return session.services;
    const view = session.feed.current() ?? [];
    const services = servicesListing(view, a);
    session.track(services, view, this.clock.now());
    return services;
  }
}
