// Maps dockerode failures to AgentError: by the Engine API's HTTP status code, or by the socket error code when
// the daemon cannot be reached. Never by message text (Docker's wording changes between versions), except
// Podman's few replies with a wrong status (podman-compat.ts, a table of its own texts).
import { AgentError, type ErrorKind } from '../../errors.js';
import { dockerStatusFor } from './podman-compat.js';

/** AgentError kind for each Engine API status code the adapter can meet. */
const kindByStatus: Record<number, ErrorKind> = {
  400: 'InvalidArgument',
  401: 'Unauthenticated',
  403: 'Unauthenticated',
  404: 'NotFound',
  409: 'FailedPrecondition',
  500: 'Internal',
  503: 'Unavailable',
};

/** Socket error codes that mean "no daemon there" (or not for us), not "the daemon said no". */
const unreachableCodes = new Set([
  'ENOENT',
  'ECONNREFUSED',
  'EACCES',
  'EPERM',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ENOTFOUND',
]);

/** The HTTP status code of a dockerode error, undefined for transport errors and other values. */
export function dockerStatus(err: unknown): number | undefined {
  const status = (err as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** The daemon's own error text (`{"message": ...}` body), else the error's message. */
function daemonMessage(err: unknown): string {
  const json = (err as { json?: unknown } | undefined)?.json;
  if (json && typeof json === 'object' && typeof (json as { message?: unknown }).message === 'string') {
    return (json as { message: string }).message;
  }
  if (Buffer.isBuffer(json) && json.length > 0) return json.toString().trim();
  const message = err instanceof Error ? err.message : String(err);
  // Streamed requests carry the daemon's text only inside dockerode's "(HTTP code N) reason - text" message.
  return message.replace(/^\(HTTP code \d+\) [^-]*- /, '').trim();
}

/**
 * Converts a dockerode failure about `subject` (e.g. `container "abc"`) into an AgentError. 404 reads
 * `<subject> not found`; other statuses `<subject>: <daemon message>`; an unreachable daemon is Unavailable and
 * names the endpoint. An AgentError passes through unchanged.
 */
export function dockerError(err: unknown, subject: string, endpoint: string): AgentError {
  if (err instanceof AgentError) return err;
  const sent = dockerStatus(err);
  const status = sent === undefined ? undefined : dockerStatusFor(sent, daemonMessage(err));
  if (status !== undefined) {
    const kind = kindByStatus[status] ?? (status >= 500 ? 'Internal' : 'InvalidArgument');
    const message = status === 404 ? `${subject} not found` : `${subject}: ${daemonMessage(err)}`;
    return new AgentError(kind, message, { cause: err });
  }
  if (err instanceof Error && err.name === 'AbortError') {
    return new AgentError('Cancelled', `${subject}: request to Docker cancelled`, { cause: err });
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && unreachableCodes.has(code)) {
    return new AgentError('Unavailable', `Docker daemon at ${endpoint} is unreachable (${code}) [${subject}]`, {
      cause: err,
    });
  }
  return new AgentError('Internal', `${subject}: ${daemonMessage(err)}`, { cause: err });
}
