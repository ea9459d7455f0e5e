// A drain of the agent stops a running operation only at a safe point: the operation stays in the journal,
// and the next agent resumes it from its last journaled step.
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { whileUnavailable, isTransient, type RuntimeWaitOptions } from './runtime-wait.js';

/** Thrown at a safe point when the agent is draining: the operation stays in the journal and resumes later. */
export class Paused extends Error {
  constructor() {
    super('agent is shutting down; operation paused at a safe point');
  }
}

/**
 * Thrown where an operation would journal a step while its first record (written beside its first runtime call,
 * see RestartIntake.record) could not be written: the operation is abandoned, what it created is removed, and its
 * caller hears the journal's error.
 */
export class Unrecorded extends Error {
  constructor(readonly why: unknown) {
    super(`the operation's first record could not be written: ${why instanceof Error ? why.message : String(why)}`);
  }
}

/** What a pausable runtime call needs besides the wait's own options. */
export interface PausableWait extends RuntimeWaitOptions {
  /** True once the agent is draining. */
  draining(): boolean;
}

/**
 * Runs a runtime call that is safe to repeat, waiting for a runtime that is briefly away (see
 * runtime-wait.ts). A wait that the agent's drain cut short throws Paused: the journaled intent is repeated
 * by the next agent.
 */
export async function pausable<T>(call: (attempt: number) => Promise<T>, opts: PausableWait): Promise<T> {
  try {
    return await whileUnavailable(call, opts);
  } catch (err) {
    if (isTransient(err) && opts.draining()) throw new Paused();
    throw err;
  }
}

/** A pausable runtime call (see pausable) named `what`, waiting until `until` (epoch ms). */
export type WhenAvailable = <T>(what: string, until: number, call: (attempt: number) => Promise<T>) => Promise<T>;

/** pausable() bound to its owner's clock, log and drain: the engine's pieces each make their calls through one. */
export function whenAvailable(d: { clock: Clock; log: Logger; draining(): boolean; drainSignal?: AbortSignal }): WhenAvailable {
  return (what, until, call) => pausable(call, { clock: d.clock, until, what, log: d.log, signal: d.drainSignal, draining: () => d.draining() });
}
