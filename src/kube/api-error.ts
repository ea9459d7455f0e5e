// Errors from the Kubernetes API server, mapped into the agent's one error type by HTTP status code.
import { AgentError, type ErrorKind } from '../errors.js';

/** The HTTP status code of a failed API call, or undefined when the server was not reached. */
export function apiStatusCode(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown } | undefined;
  if (typeof e?.code === 'number') return e.code;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  return undefined;
}

/** The API server's own message (the Status object's), when the body carries one. */
export function serverMessage(err: unknown): string | undefined {
  let body = (err as { body?: unknown } | undefined)?.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return (body as string) || undefined;
    }
  }
  const msg = (body as { message?: unknown } | undefined)?.message;
  return typeof msg === 'string' ? msg : undefined;
}

const KIND_BY_STATUS: Record<number, ErrorKind> = {
  400: 'InvalidArgument',
  401: 'Unauthenticated',
  403: 'FailedPrecondition',
  404: 'NotFound',
  409: 'Aborted',
  410: 'Aborted',
  422: 'InvalidArgument',
  429: 'Unavailable',
};

/** An AgentError for a failed API call about `what`; transport failures and 5xx are Unavailable. */
export function kubeError(err: unknown, what: string): AgentError {
  if (err instanceof AgentError) return err;
  const code = apiStatusCode(err);
  const kind: ErrorKind = code === undefined || code >= 500 ? 'Unavailable' : (KIND_BY_STATUS[code] ?? 'Internal');
  const detail = serverMessage(err) ?? (code === undefined ? (err instanceof Error ? err.message : String(err)) : `HTTP ${code}`);
  return Object.assign(new AgentError(kind, `${what}: ${detail}`, { cause: err }), { httpStatus: code });
}

/**
 * Whose credentials a client calls with. A user's (inplacectl): a 401 is their credentials refused, an error to
 * show. The agent's own (its ServiceAccount token): a 401 means the API server no longer accepts the token of a
 * pod being deleted, or of a token being rotated; it is waited out like an outage (Unavailable), never taken
 * as the failure of what the agent was doing: a terminating agent's work is finished by the next one.
 */
export type Caller = 'user' | 'agent';

/** kubeError for a caller: for the agent's own calls, a 401 is Unavailable (see Caller). */
export function callerError(err: unknown, what: string, caller: Caller): AgentError {
  const e = kubeError(err, what);
  if (caller !== 'agent' || apiStatusCode(err) !== 401) return e;
  return Object.assign(new AgentError('Unavailable', `${e.message} (${AGENT_401_NOTE})`, { cause: err }), { httpStatus: 401 });
}

/** What a 401 to the agent's own call says. */
export const AGENT_401_NOTE = "the API server does not accept this agent's credentials now: its pod may be terminating";

/** Whether err is the API server's 409 Conflict (a stale resourceVersion, or the object exists). */
export function isConflict(err: unknown): boolean {
  return apiStatusCode(err) === 409 || apiStatusCode((err as { cause?: unknown } | undefined)?.cause) === 409;
}

/** Whether err (or the error it wraps) is the API server's 403 Forbidden: this agent's RBAC lacks the permission. */
export function isForbidden(err: unknown): boolean {
  const e = err as { httpStatus?: unknown; cause?: unknown } | undefined;
  return apiStatusCode(err) === 403 || e?.httpStatus === 403 || apiStatusCode(e?.cause) === 403;
}
