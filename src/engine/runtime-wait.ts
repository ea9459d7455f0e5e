// Riding out a runtime that is briefly away (containerd or dockerd restarting, a socket that refuses for a
// moment): a call that fails because the runtime is unavailable is made again after a capped, growing delay
// on the injected clock, until a time limit. Any other failure is the call's own answer and goes straight up.
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import { backoffDelay } from '../backoff.js';
import type { Logger } from '../log.js';

/** First delay after a failed call, ms. */
const FIRST_DELAY_MS = 100;

/** Longest delay between two calls, ms: how late a runtime that came back is noticed, at most. */
const MAX_DELAY_MS = 2000;

/** Whether err says the runtime could not be reached, rather than anything about the call or its subject. */
export function isTransient(err: unknown): boolean {
  return AgentError.is(err, 'Unavailable');
}

/** The delay before call number attempt + 1, ms (attempt 1 is the first call). */
export function retryDelay(attempt: number): number {
  return backoffDelay(attempt, { initialMs: FIRST_DELAY_MS, maxMs: MAX_DELAY_MS });
}

/** How to wait. */
export interface RuntimeWaitOptions {
  clock: Clock;
  /** Epoch ms after which the runtime is no longer waited for: the last transient error is thrown. */
  until: number;
  /** What the call does, for the log and the final error ("stop the old container of \"app\""). */
  what: string;
  log?: Logger;
  /** Cuts the wait short (the operation's own cancellation, say); the call's last error is thrown. */
  signal?: AbortSignal;
}

/**
 * Runs call(attempt) until it returns or fails with a non-transient error, waiting with backoff while the
 * runtime is unavailable, up to opts.until. call must be safe to repeat: a call the runtime may have carried
 * out before it went away is made again (attempt > 1 lets the caller look for its effect first).
 */
export async function whileUnavailable<T>(call: (attempt: number) => Promise<T>, opts: RuntimeWaitOptions): Promise<T> {
  const began = opts.clock.now();
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await call(attempt);
      if (attempt > 1) opts.log?.info('runtime available again', { what: opts.what, waitedMs: opts.clock.now() - began, attempts: attempt });
      return result;
    } catch (err) {
      if (!isTransient(err)) throw err;
      const left = opts.until - opts.clock.now();
      if (left <= 0 || opts.signal?.aborted) {
        const e = err as AgentError;
        const waited = Math.round((opts.clock.now() - began) / 100) / 10;
        throw new AgentError('Unavailable', `could not ${opts.what}: the runtime stayed unavailable for ${waited}s: ${e.message}`, { cause: err });
      }
      if (attempt === 1) opts.log?.warn('runtime unavailable; waiting for it', { what: opts.what, error: (err as Error).message, waitLimitMs: left });
      await opts.clock.sleep(Math.min(left, retryDelay(attempt)), opts.signal).catch(() => undefined);
    }
  }
}
