// A FIFO concurrency limit: at most maxParallel holders at once, the rest wait in arrival order and are told
// their 1-based position whenever it changes. Used node-wide (every pull) and per request (`--parallel`).
import { AgentError } from '../errors.js';

/** Gives the slot back; calling it again does nothing. */
export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
  onPosition?: (position: number) => void;
  position: number;
}

/** A FIFO limit on concurrent holders. */
export class PullQueue {
  private active = 0;
  private readonly waiters: Waiter[] = [];

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
    return this.waiters.length;
  }

  /**
   * Resolves with a release once a slot is free, in arrival order. While waiting, onPosition gets the 1-based
   * position (first call right away, then on every change). Rejects with the signal's reason (and leaves the
   * queue) when the signal aborts first.
   */
  acquire(signal?: AbortSignal, onPosition?: (position: number) => void): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.active < this.maxParallel && this.waiters.length === 0) {
      this.active++;
      this.changed();
      return Promise.resolve(this.releaser());
    }
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
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
        position: this.waiters.length + 1,
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
      const next = this.waiters.shift();
      if (next) {
        // The slot passes straight to the next waiter: `active` stays the same.
        next.grant(this.releaser());
        this.renumber(0);
      } else {
        this.active--;
      }
      this.changed();
    };
  }

  private renumber(from: number): void {
    for (let i = from; i < this.waiters.length; i++) {
      const w = this.waiters[i];
      if (w.position !== i + 1) {
        w.position = i + 1;
        w.onPosition?.(w.position);
      }
    }
  }

  private changed(): void {
    this.onChange?.(this.active, this.waiters.length);
  }
}
