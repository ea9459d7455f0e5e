// One prewarm's part as the fleet agent runs it (fleet-agent.ts), and how a part is woken before its delay is
// over: now (ending its sleep, or skipping the next one), or by a timer, keeping only the earliest wake due.
import type { Clock } from '../../clock.js';
import type { ImagePrewarm } from './types.js';

/** One prewarm's part as the agent runs it: its loop, and what wakes the loop before its delay is over. */
export interface Part {
  uid: string;
  gen: number;
  pw: ImagePrewarm;
  stop: AbortController;
  done: Promise<void>;
  /** Ends the current sleep between two steps. */
  nap?: AbortController;
  /** A wake came while no sleep was under way: the next sleep is skipped. */
  woken?: boolean;
  /** The API server refused a step with 403 and the agent has said so: later refusals are not logged again. */
  forbiddenSaid?: boolean;
  /** A wake due later: when, and how to cancel it. */
  wakeDue?: number;
  wakeTimer?: AbortController;
}

/** Runs the part's next step within inMs, or sooner when it is due sooner anyway (never once the part is stopped). */
export function wakePart(p: Part, clock: Clock, inMs: number): void {
  if (p.stop.signal.aborted) return;
  const due = clock.now() + Math.max(0, inMs);
  if (p.wakeDue !== undefined && p.wakeDue <= due) return;
  p.wakeTimer?.abort();
  p.wakeTimer = undefined;
  p.wakeDue = undefined;
  const now = () => {
    if (p.nap) p.nap.abort();
    else p.woken = true;
  };
  if (inMs <= 0) return now();
  const timer = new AbortController();
  p.wakeDue = due;
  p.wakeTimer = timer;
  clock.sleep(inMs, timer.signal).then(() => {
    if (p.wakeTimer !== timer) return;
    p.wakeTimer = undefined;
    p.wakeDue = undefined;
    now();
  }, () => undefined);
}
