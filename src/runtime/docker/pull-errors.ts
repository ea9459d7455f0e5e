// The kind of a failed Docker pull. dockerd reports registry answers only as text in its JSON stream (or an
// HTTP status), so a missing image, refused credentials and a full disk are recognised by their fixed wording.
import { AgentError, type ErrorKind } from '../../errors.js';

const UNAUTHORIZED = /\b401\b|unauthorized|authentication required|no basic auth credentials|access to the resource is denied|denied: requested access/i;
const MISSING = /manifest unknown|name unknown|blob unknown|repository does not exist|manifest for \S+ not found|\b404\b/i;
// A full image filesystem: the kernel's ENOSPC/EDQUOT text, as Docker passes it on.
const DISK_FULL = /no space left on device|\bENOSPC\b|disk quota exceeded/i;

/** err with the kind its text or status says (its message and cause kept); err itself when that is its kind. */
export function dockerPullError(err: AgentError): AgentError {
  const kind = pullKind(err);
  return kind === err.kind ? err : new AgentError(kind, err.message, { cause: err, reason: err.reason });
}

function pullKind(e: AgentError): ErrorKind {
  if (e.kind === 'Cancelled' || e.kind === 'DeadlineExceeded' || e.kind === 'ResourceExhausted' || e.kind === 'InvalidArgument') return e.kind;
  if (DISK_FULL.test(e.message)) return 'ResourceExhausted';
  if (e.kind === 'Unauthenticated' || (e.kind !== 'NotFound' && UNAUTHORIZED.test(e.message))) return 'Unauthenticated';
  // dockerd answers a pull of an image its registry lacks with HTTP 404 (the adapter keeps only the status).
  if (e.kind === 'NotFound' || MISSING.test(e.message)) return 'NotFound';
  return e.kind;
}
