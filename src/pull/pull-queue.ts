// A FIFO concurrency limit: at most maxParallel holders at once, the rest wait in arrival order. Used node-wide
// (every pull) and per request (`--parallel`).
//
// Positions: a waiter is told its 1-based position when it joins, and after that only while it is among the
// first POSITION_WINDOW waiters. A change (a grant, a waiter leaving) thus notifies at most POSITION_WINDOW
// waiters, whatever the queue's length: n queued pulls cost O(n) position events, not O(n^2).
import { AgentError } from '../errors.js';

/** Gives the slot back; calling it again does nothing. */
export type Release = () => void;

/** Waiters at the front of the queue that are told every change of their position. */
export const POSITION_WINDOW = 10;

interface Waiter {
  grant: (release: Release) => void;
  onPosition?: (position: number) => void;
  position: number;
}

/** A FIFO limit on concurrent holders. */
export class PullQueue {
  private active = 0;
  /** Waiters in arrival order from index head on (entries before head were granted). */
  private waiters: Waiter[] = [];
  private head = 0;

  /** onChange is called with (running, waiting) after every change. */
  constructor(
    readonly maxParallel = 2,
    private readonly onChange?: (running: number, waiting: number) => void,
  ) {
    if (!Number.isInteger(maxParallel) || maxParallel < 1) {
      throw new AgentError('InvalidArgument', `max parallel pulls must be a positive integer, not ${maxParallel}`);
    }
  }

  /** Holders now. */
  get running(): number {
    return this.active;
  }

  /** Waiters now. */
  get waiting(): number {
    return this.waiters.length - this.head;
  }

  /**
   * Resolves with a release once a slot is free, in arrival order. While waiting, onPosition gets the 1-based
   * position: right away, then on every change while among the first POSITION_WINDOW. Rejects with the
   * signal's reason (and leaves the queue) when the signal aborts first.
   */
  acquire(signal?: AbortSignal, onPosition?: (position: number) => void): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.active < this.maxParallel && this.waiting === 0) {
      this.active++;
      this.changed();
      return Promise.resolve(this.releaser());
    }
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter, this.head);
        if (i >= 0) {
          this.waiters.splice(i, 1);
          this.renumber(i);
          this.changed();
        }
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        onPosition,
        position: this.waiting + 1,
      };
      this.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.changed();
      onPosition?.(waiter.position);
    });
  }

  private releaser(): Release {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiters[this.head];
      if (next) {
        // The slot passes straight to the next waiter: `active` stays the same.
        this.waiters[this.head] = undefined as unknown as Waiter;
        this.head++;
        this.compact();
        next.grant(this.releaser());
        this.renumber(this.head);
      } else {
        this.active--;
      }
      this.changed();
    };
  }

  /** Tells the waiters in the window, from array index `from` on, their new position. */
  private renumber(from: number): void {
    const end = Math.min(this.waiters.length, this.head + POSITION_WINDOW);
    for (let i = from; i < end; i++) {
      const w = this.waiters[i];
      const position = i - this.head + 1;
      if (w.position !== position) {
        w.position = position;
        w.onPosition?.(position);
      }
    }
  }

  /** Drops the granted entries at the front once they are most of the array (amortised O(1)). */
  private compact(): void {
    if (this.head >= 1024 && this.head * 2 >= this.waiters.length) {
      this.waiters = this.waiters.slice(this.head);
      this.head = 0;
    }
  }

  private changed(): void {
    this.onChange?.(this.active, this.waiting);
  }
}
