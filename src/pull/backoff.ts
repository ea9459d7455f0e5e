// Capped exponential backoff with jitter between pull retries (the caller sleeps on its own clock).

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

  constructor(opts: BackoffOptions = {}) {
    this.initialMs = opts.initialMs ?? 1000;
    this.maxMs = opts.maxMs ?? 30_000;
    this.factor = opts.factor ?? 2;
    this.jitter = Math.min(1, Math.max(0, opts.jitter ?? 0.2));
    this.random = opts.random ?? Math.random;
  }

  /** The delay before retry number `retry` (1 for the first retry), ms. */
  delay(retry: number): number {
    const base = Math.min(this.maxMs, this.initialMs * this.factor ** Math.max(0, retry - 1));
    const spread = base * this.jitter * (2 * this.random() - 1);
    return Math.max(0, Math.min(this.maxMs, Math.round(base + spread)));
  }
}
