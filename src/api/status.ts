// The one mapping between the agent's error kinds and gRPC status codes, both ways.
import * as grpc from '@grpc/grpc-js';
import { AgentError, asAgentError, type ErrorKind } from '../errors.js';
import { unixPath } from './address.js';
import { permissionDeniedMessage } from './socket-access.js';

const TO_CODE: Record<ErrorKind, grpc.status> = {
  NotFound: grpc.status.NOT_FOUND,
  InvalidArgument: grpc.status.INVALID_ARGUMENT,
  FailedPrecondition: grpc.status.FAILED_PRECONDITION,
  Unavailable: grpc.status.UNAVAILABLE,
  DeadlineExceeded: grpc.status.DEADLINE_EXCEEDED,
  Aborted: grpc.status.ABORTED,
  Cancelled: grpc.status.CANCELLED,
  Unauthenticated: grpc.status.UNAUTHENTICATED,
  PermissionDenied: grpc.status.PERMISSION_DENIED,
  ResourceExhausted: grpc.status.RESOURCE_EXHAUSTED,
  Internal: grpc.status.INTERNAL,
  Unknown: grpc.status.UNKNOWN,
};

/** Trailer the agent puts on every error it sends, so a client can tell them from its own transport errors. */
export const AGENT_ERROR_TRAILER = 'x-inplace-agent-error';
/** Trailer carrying the error's fixed reason (engine/reasons.ts), when it has one. */
export const AGENT_REASON_TRAILER = 'x-inplace-agent-reason';

/** Longest message put in a status: a status larger than the transport's limits never reaches the caller. */
export const MAX_STATUS_MESSAGE = 1024;

/** A gRPC service error carrying the agent error's code and message (cut to MAX_STATUS_MESSAGE). */
export function toServiceError(err: unknown): grpc.ServiceError {
  const e = asAgentError(err);
  const message = e.message.length > MAX_STATUS_MESSAGE ? `${e.message.slice(0, MAX_STATUS_MESSAGE)}... (cut)` : e.message;
  const out = new Error(message) as grpc.ServiceError;
  out.code = TO_CODE[e.kind];
  out.details = message;
  out.metadata = new grpc.Metadata();
  out.metadata.set(AGENT_ERROR_TRAILER, e.kind);
  if (e.reason) out.metadata.set(AGENT_REASON_TRAILER, e.reason);
  return out;
}

/** The agent error a client sees for a failed call. */
export function fromServiceError(err: unknown, target: string): AgentError {
  const se = err as Partial<grpc.ServiceError>;
  if (typeof se.code !== 'number') return asAgentError(err);
  const kind = (Object.keys(TO_CODE) as ErrorKind[]).find((k) => TO_CODE[k] === se.code) ?? 'Internal';
  const fromAgent = (se.metadata?.get(AGENT_ERROR_TRAILER).length ?? 0) > 0;
  const sock = unixPath(target);
  if (!fromAgent && se.code === grpc.status.UNAVAILABLE && sock && /EACCES|EPERM/.test(se.details ?? '')) {
    return new AgentError('Unavailable', permissionDeniedMessage(sock));
  }
  if (!fromAgent && se.code === grpc.status.UNAVAILABLE && /connect|No connection|ENOENT|ECONNREFUSED/i.test(se.details ?? '')) {
    const why = /ENOENT/.test(se.details ?? '') ? 'no such socket' : /ECONNREFUSED/.test(se.details ?? '') ? 'connection refused' : (se.details ?? '').split('. ')[0];
    return new AgentError('Unavailable', `cannot reach the agent at ${target} (${why}): is inplace-agent running? (--agent or $INPLACE_AGENT)`);
  }
  const reason = fromAgent ? se.metadata?.get(AGENT_REASON_TRAILER)[0] : undefined;
  return new AgentError(kind, se.details || se.message || 'unknown error', { reason: typeof reason === 'string' ? reason : undefined });
}
