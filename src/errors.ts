// The agent's one error type. Adapters map runtime failures into it; the API edge maps it to gRPC codes.

/** What went wrong, in terms a caller can act on. One-to-one with a gRPC status code at the API edge. */
export type ErrorKind =
  | 'NotFound'
  | 'InvalidArgument'
  | 'FailedPrecondition'
  | 'Unavailable'
  | 'DeadlineExceeded'
  | 'Aborted'
  | 'Cancelled'
  | 'Unauthenticated'
  | 'PermissionDenied'
  | 'ResourceExhausted'
  | 'Internal'
  /** A runtime's answer the agent does not know (e.g. a pull failure message in no table): not guessed at. */
  | 'Unknown';

/** An error with a kind and a message that names the thing it is about. */
export class AgentError extends Error {
  readonly kind: ErrorKind;
  /** A fixed reason string (see engine/reasons.ts) when the error is one a caller may branch on. */
  readonly reason?: string;

  constructor(kind: ErrorKind, message: string, options?: { cause?: unknown; reason?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AgentError';
    this.kind = kind;
    if (options?.reason) this.reason = options.reason;
  }

  /** Whether err is an AgentError of one of the given kinds. */
  static is(err: unknown, ...kinds: ErrorKind[]): err is AgentError {
    return err instanceof AgentError && (kinds.length === 0 || kinds.includes(err.kind));
  }
}

/** Wraps any thrown value as an AgentError, keeping an AgentError as it is. */
export function asAgentError(err: unknown, kind: ErrorKind = 'Internal'): AgentError {
  if (err instanceof AgentError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new AgentError(kind, message, { cause: err });
}
