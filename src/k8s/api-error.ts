// Errors from the Kubernetes API server, mapped into the agent's one error type by HTTP status code. Every API
// client of the agent and of inplacectl (kube-api.ts, container-restart/api.ts, rollout-api.ts, fleet-api.ts,
// cli/prewarm-api.ts, ...) goes through kubeError, so one status means one kind everywhere, with one exception
// in the same table: a 401 means something else to the agent (its own token) than to a user's client.
import { AgentError, type ErrorKind } from '../errors.js';

/** The HTTP status code of a failed API call (raw from the client, or kept by kubeError), or undefined when the server was not reached. */
export function apiStatusCode(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown; httpStatus?: unknown } | undefined;
  if (typeof e?.code === 'number') return e.code;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  if (typeof e?.httpStatus === 'number') return e.httpStatus;
  return undefined;
}

/** The API server's own message (the Status object's), when the body carries one. */
export function serverMessage(err: unknown): string | undefined {
  let body = (err as { body?: unknown } | undefined)?.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return (body as string).slice(0, 300) || undefined;
    }
  }
  const msg = (body as { message?: unknown } | undefined)?.message;
  return typeof msg === 'string' ? msg : undefined;
}

/**
 * Whose credentials a client presents: the agent's own ServiceAccount token, or a user's kubeconfig (inplacectl
 * --kubeconfig, kubectl-inplace). The default everywhere is the agent.
 */
export type KubeCaller = 'agent' | 'user';

const KIND_BY_STATUS: Record<number, ErrorKind | Record<KubeCaller, ErrorKind>> = {
  400: 'InvalidArgument',
  // The API server does not accept the credentials now. For the agent this is its own bound token: the API server
  // stops accepting a terminating pod's token while the agent still runs its grace period, and a token being
  // rotated is refused for a moment. Waited out like an outage (the next agent finishes the operation from the
  // journal), never taken as the operation's failure. For a user's client it is the kubeconfig's credentials
  // (an expired or bogus token, a revoked certificate): waiting does not help, the user must log in again.
  401: { agent: 'Unavailable', user: 'Unauthenticated' },
  403: 'FailedPrecondition',
  404: 'NotFound',
  409: 'Aborted',
  410: 'Aborted',
  422: 'InvalidArgument',
  429: 'Unavailable',
};

/** Why a 401 is Unavailable for the agent, said in the error's message. */
export const UNAUTHORIZED_NOTE = "the API server does not accept these credentials now; for the agent: its pod is terminating, or its token is being rotated";

/** What a 401 means to a user's client, said in the error's message. */
export const USER_UNAUTHORIZED_NOTE = "the API server refused the kubeconfig's credentials (expired or wrong token or certificate?); log in again or pick another --kubeconfig/--context";

/** The error kind for an API server's HTTP status as caller sees it; undefined (not reached) and 5xx are Unavailable, a status in no rule Internal. */
export function kindOfStatus(status: number | undefined, caller: KubeCaller = 'agent'): ErrorKind {
  if (status === undefined || status >= 500) return 'Unavailable';
  const rule = KIND_BY_STATUS[status];
  if (rule === undefined) return 'Internal';
  return typeof rule === 'string' ? rule : rule[caller];
}

/** An AgentError for a failed API call about `what`, of kindOfStatus's kind for caller; it keeps the status (apiStatusCode reads it). */
export function kubeError(err: unknown, what: string, caller: KubeCaller = 'agent'): AgentError {
  if (err instanceof AgentError) return err;
  const code = apiStatusCode(err);
  let detail: string;
  if (code === undefined) detail = `the API server cannot be reached: ${err instanceof Error ? err.message : String(err)}`;
  else detail = serverMessage(err) ?? `HTTP ${code}`;
  if (code === 401) detail += ` (${caller === 'user' ? USER_UNAUTHORIZED_NOTE : UNAUTHORIZED_NOTE})`;
  return Object.assign(new AgentError(kindOfStatus(code, caller), `${what}: ${detail}`, { cause: err }), { httpStatus: code });
}

/** Whether err is the API server refusing a user's kubeconfig credentials (kubeError for a 'user' caller's 401). */
export function isCredentialsRefused(err: unknown): boolean {
  return AgentError.is(err, 'Unauthenticated') && apiStatusCode(err) === 401;
}

/** Whether err (or the error it wraps) is the API server's 409 Conflict (a stale resourceVersion, or the object exists). */
export function isConflict(err: unknown): boolean {
  return apiStatusCode(err) === 409 || apiStatusCode((err as { cause?: unknown } | undefined)?.cause) === 409;
}

/** Whether err (or the error it wraps) is the API server's 403 Forbidden: this agent's RBAC lacks the permission. */
export function isForbidden(err: unknown): boolean {
  return apiStatusCode(err) === 403 || apiStatusCode((err as { cause?: unknown } | undefined)?.cause) === 403;
}

/** fn's answer; a failure thrown as kubeError(err, what, caller). */
export async function kubeCall<T>(what: string, fn: () => Promise<T>, caller: KubeCaller = 'agent'): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw kubeError(err, what, caller);
  }
}
