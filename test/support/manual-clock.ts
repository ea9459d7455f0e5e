// A clock for unit tests of polling loops: sleep() moves time forward at once instead of waiting. Not for code
// that keeps a timer beside its work (a deadline would pass at once): manual-timers.ts fires timers only when
// the test advances time.
import type { Clock } from '../../src/clock.js';

/** A Clock whose time only moves when something sleeps (or advance() is called). */
export class ManualClock implements Clock {
  constructor(public t = Date.parse('2026-01-01T00:00:00Z')) {}

  now(): number {
    return this.t;
  }

  sleep(ms: number): Promise<void> {
    this.t += Math.max(0, ms);
    return new Promise((resolve) => setImmediate(resolve));
  }

  /** Moves time forward by ms. */
  advance(ms: number): void {
    this.t += ms;
  }
}
