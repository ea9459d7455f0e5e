// The hard bound on a shutdown. After SIGTERM the agent exits within its drain timeout whatever the API server or
// the runtime answers: an agent once kept running for 6 minutes after its SIGTERM, its watches answered 401 and
// each API call waiting out its 60 s deadline (issue 39). The clean path drains the operations within the budget
// below and stops the rest; the bound is the backstop for whatever still waits. Exiting there is safe: every
// step is journalled before its side effect (engine/journal.ts), so an operation cut short resumes at the next
// start. The DaemonSet's terminationGracePeriodSeconds sits above the drain timeout (deploy/daemonset.yaml).
import type { Logger } from '../log.js';

/** The least time any shutdown is given, even with --drain-timeout 0: the sockets and files close within it. */
export const MIN_SHUTDOWN_MS = 1000;
/** The part of the drain timeout kept for what follows the operations' drain (the API, watches, the runtime). */
export const AFTER_DRAIN_MS = 2000;

/** The bound on a whole shutdown for a drain timeout: the drain timeout, at least MIN_SHUTDOWN_MS. */
export function shutdownBoundMs(drainTimeoutMs: number): number {
  return Math.max(drainTimeoutMs, MIN_SHUTDOWN_MS);
}

/** How long the operations may still drain when elapsedMs of the shutdown are gone (never below 0). */
export function drainBudgetMs(drainTimeoutMs: number, elapsedMs: number): number {
  return Math.max(0, drainTimeoutMs - elapsedMs - AFTER_DRAIN_MS);
}

/** A timer that does not keep the process alive. */
export type Schedule = (fn: () => void, ms: number) => { unref(): unknown };

/**
 * Arms the bound: boundMs from now the process exits with status 1, after an error line saying so, unless it has
 * ended by then. The timer is unref'd, so it never holds an agent that is done.
 */
export function armShutdownBound(boundMs: number, log: Logger, exit: (code: number) => void = (c) => process.exit(c), schedule: Schedule = setTimeout): void {
  schedule(() => {
    log.error('shutdown did not finish within the drain timeout: exiting now; operations still running resume at the next start', { boundMs });
    // Let the logger hand the line on before the process ends.
    setImmediate(() => exit(1));
  }, boundMs).unref();
}
