// The agent's one back-off: a delay that grows by a factor per retry up to a cap, spread by a jitter, and
// waited for on an injected clock. Pull retries, the follows of the API server, the waits for a runtime that
// is away, the fleet's attempts and the status writes all take their delays from here.
import type { Clock } from './clock.js';

/** Shape of the backoff. */
export interface BackoffOptions {
  /** Delay before the first retry, ms (default 1000). */
  initialMs?: number;
  /** Upper bound of any delay, ms (default 30000). */
  maxMs?: number;
  /** Growth per retry (default 2). */
  factor?: number;
  /** Fraction of the delay randomised either way, 0..1 (default 0.2). */
  jitter?: number;
  /** Source of randomness in [0, 1) (default Math.random). */
  random?: () => number;
}

/** Delays between retries: initial * factor^(retry-1), capped, then spread by ±jitter (and capped again). */
export class Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly random: () => number;

  constructor(
    private readonly clock: Clock,
    opts: BackoffOptions = {},
  ) {
    this.initialMs = opts.initialMs ?? 1000;
    this.maxMs = opts.maxMs ?? 30_000;
    this.factor = opts.factor ?? 2;
    this.jitter = Math.min(1, Math.max(0, opts.jitter ?? 0.2));
    this.random = opts.random ?? Math.random;
  }

  /** The delay before retry number `retry` (1 for the first retry), ms. */
  delay(retry: number): number {
    const base = backoffDelay(retry, { initialMs: this.initialMs, maxMs: this.maxMs, factor: this.factor });
    const spread = base * this.jitter * (2 * this.random() - 1);
    return Math.max(0, Math.min(this.maxMs, Math.round(base + spread)));
  }

  /** Sleeps the delay of retry `retry`; rejects with the signal's reason when it aborts. Returns the delay. */
  async wait(retry: number, signal?: AbortSignal): Promise<number> {
    const ms = this.delay(retry);
    await this.clock.sleep(ms, signal);
    return ms;
  }
}

/** The delay before retry `retry` (1 for the first) without jitter: initialMs * factor^(retry-1), at most maxMs. */
export function backoffDelay(retry: number, shape: { initialMs: number; maxMs: number; factor?: number }): number {
  return Math.min(shape.maxMs, shape.initialMs * (shape.factor ?? 2) ** Math.max(0, retry - 1));
}
