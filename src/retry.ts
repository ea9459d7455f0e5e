// The agent's one retry loop: a call tried again after a back-off while its failure can heal, a bounded number
// of times, on an injected clock. Loops with other rules (a 409 read again at once, a poll until a state shows,
// a stream resumed from its last event) are not retries of one call and keep their own shape.
import type { Clock } from './clock.js';

/** When and how often retry() tries a call again. */
export interface RetryPolicy {
  /** Most tries in all, the first included. */
  tries: number;
  /** The wait before retry n (1 for the first retry), ms: backoffDelay or Backoff.delay of backoff.ts. */
  delay(retry: number): number;
  /** Whether a failure may heal; one that cannot is thrown at once. */
  retryable(err: unknown): boolean;
  /** Told of each failure that is tried again: the failed try's number (1 for the first), its error, the wait. */
  onRetry?(attempt: number, err: unknown, delayMs: number): void;
  /** Ends the waits: the signal's reason is thrown. */
  signal?: AbortSignal;
}

/**
 * Calls fn(attempt) (1 for the first try) until it resolves, and answers what it resolved with. A failure that
 * is not retryable, or that of the last try, is thrown as it is.
 */
export async function retry<T>(clock: Clock, policy: RetryPolicy, fn: (attempt: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= policy.tries || !policy.retryable(err)) throw err;
      const ms = policy.delay(attempt);
      policy.onRetry?.(attempt, err, ms);
      await clock.sleep(ms, policy.signal);
    }
  }
}
