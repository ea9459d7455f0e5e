// What the ContainerRestart controller reports when a request ends. An interface, so the controller depends on
// no metrics library (the daemon passes a prom-client one).

/** Result label of a request refused before anything was touched (no operation ran). */
export const RESULT_REFUSED = 'Refused';

/** Where the controller reports each request it took, once, when its status turns final. */
export interface ContainerRestartMetrics {
  /**
   * result: the operation's final state (Succeeded, Failed, RolledBack, Cancelled) or Refused; reason: its
   * reason constant (engine/reasons.ts), '' when it succeeded or has none; seconds: from the claim to the end.
   */
  finished(result: string, reason: string, seconds: number): void;
}
