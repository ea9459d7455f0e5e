// The tests' one clock. Its time moves only when the test says so: sleep() sets a timer that fires when
// advance() reaches it. Tests of code that does real I/O meanwhile (the engine on a real runtime) wait for the
// code to be asleep on a timer (sleeping()) before they move time, so that time moves only while it waits.
// For a polling loop with no timer beside its work, `{ sleepsAdvance: true }` makes each sleep() move time
// forward by its own length at once (a deadline kept beside the work would pass at once: not for those).
import type { Clock } from '../../src/clock.js';

/** A timer set by sleep(): how long it was asked for and when it is due. */
export interface ManualTimer {
  ms: number;
  at: number;
}

interface Timer extends ManualTimer {
  resolve: () => void;
}

/** How a ManualClock starts. */
export interface ManualClockOptions {
  /** The time it starts at, ms since the epoch (default 1,000,000). */
  at?: number;
  /** Each sleep() moves time forward by its length at once and resolves on the next turn of the event loop. */
  sleepsAdvance?: boolean;
}

/** A clock that moves only when advanced (or, with sleepsAdvance, when something sleeps). */
export class ManualClock implements Clock {
  private t: number;
  private readonly sleepsAdvance: boolean;
  private timers: Timer[] = [];
  private watchers: { match: (t: ManualTimer) => boolean; found: (t: ManualTimer) => void }[] = [];
  /** Every sleep asked for, in order, ms. */
  readonly sleeps: number[] = [];

  constructor(opts: ManualClockOptions = {}) {
    this.t = opts.at ?? 1_000_000;
    this.sleepsAdvance = opts.sleepsAdvance ?? false;
  }

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.sleeps.push(ms);
    if (this.sleepsAdvance) {
      this.t += Math.max(0, ms);
      return new Promise((resolve) => setImmediate(resolve));
    }
    return new Promise<void>((resolve, reject) => {
      const timer: Timer = {
        ms,
        at: this.t + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.timers = this.timers.filter((x) => x !== timer);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.timers.push(timer);
      for (const w of this.watchers.filter((x) => x.match(timer))) {
        this.watchers = this.watchers.filter((x) => x !== w);
        w.found({ ms: timer.ms, at: timer.at });
      }
    });
  }

  /** The timers set and not yet fired nor aborted, soonest first. */
  pending(): ManualTimer[] {
    return this.timers.map(({ ms, at }) => ({ ms, at })).sort((a, b) => a.at - b.at);
  }

  /**
   * Resolves with a timer that matches, pending now or set later: the code under test is asleep on it.
   * Rejects after realTimeoutMs of real time (for code waiting on real I/O) naming what it waited for;
   * resolves with undefined when signal aborts first.
   */
  sleeping(match: (t: ManualTimer) => boolean, what = 'a matching sleep', realTimeoutMs = 30_000, signal?: AbortSignal): Promise<ManualTimer | undefined> {
    const now = this.pending().find(match);
    if (now) return Promise.resolve(now);
    return new Promise<ManualTimer | undefined>((resolve, reject) => {
      const stop = () => {
        clearTimeout(guard);
        signal?.removeEventListener('abort', onAbort);
        this.watchers = this.watchers.filter((x) => x !== watcher);
      };
      const guard = setTimeout(() => {
        stop();
        reject(new Error(`nothing slept on ${what} within ${realTimeoutMs} ms (pending: ${JSON.stringify(this.pending())})`));
      }, realTimeoutMs);
      const onAbort = () => {
        stop();
        resolve(undefined);
      };
      const watcher = {
        match,
        found: (t: ManualTimer) => {
          stop();
          resolve(t);
        },
      };
      this.watchers.push(watcher);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Moves time forward by ms, firing due timers in order and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    for (;;) {
      await flush();
      const due = this.timers.filter((x) => x.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = Math.max(this.t, due.at);
      due.resolve();
    }
    this.t = target;
    await flush();
  }

  /** Advances time until promise settles, step ms at a time (at most maxSteps); returns its outcome. */
  async until<T>(promise: Promise<T>, step = 1000, maxSteps = 100_000): Promise<T> {
    let settled = false;
    const watched = promise.finally(() => (settled = true));
    watched.catch(() => undefined);
    for (let i = 0; !settled && i < maxSteps; i++) await this.advance(step);
    if (!settled) throw new Error(`still not settled after ${maxSteps} steps of ${step} ms`);
    return watched;
  }
}

/** Lets pending promise continuations run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise((r) => setImmediate(r));
}
