// The one shape of an error in `-o json` mode. Whatever failed (a usage error found by inplacectl, a refusal or
// failure from the agent or the Kubernetes API), stdout gets this object and stderr gets its message as one
// text line; the exit status is exitCode.
import type { AgentError } from '../errors.js';

/** An error as `-o json` prints it on stdout. */
export interface JsonError {
  error: string;
  errorKind: string;
  /** The agent's fixed reason, when it gave one. */
  reason?: string;
  exitCode: number;
}

/** The JSON form of err, ended with exit status exitCode. */
export function jsonError(err: AgentError, exitCode: number): JsonError {
  return { error: err.message, errorKind: err.kind, ...(err.reason ? { reason: err.reason } : {}), exitCode };
}
