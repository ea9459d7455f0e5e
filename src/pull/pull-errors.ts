// What a failed pull means for the caller: which kind of error it is, whether a retry can help, and a
// message that names the image and never a secret.
import { AgentError, asAgentError, type ErrorKind } from '../errors.js';
import type { RegistryAuth, RuntimeKind } from '../runtime/types.js';
import { redact } from './auth.js';

/** Kinds a retry cannot heal: the image does not exist, the credentials are wrong, the reference is bad, the disk is full. */
export const PERMANENT_KINDS: readonly ErrorKind[] = ['NotFound', 'Unauthenticated', 'InvalidArgument', 'Cancelled', 'ResourceExhausted'];

// dockerd reports registry answers only as text in its JSON stream, so for Docker these are recognised by
// their fixed wording. containerd's CRI answers are classified by the adapter, from its table of the messages
// containerd really sends (runtime/cri/pull-messages.ts); here its kind is taken as it is.
const UNAUTHORIZED = /\b401\b|unauthorized|authentication required|no basic auth credentials|access to the resource is denied|denied: requested access/i;
const MISSING = /manifest unknown|name unknown|blob unknown|repository does not exist|manifest for \S+ not found|\b404\b/i;
// A full image filesystem: the kernel's ENOSPC/EDQUOT text, as Docker passes it on.
const DISK_FULL = /no space left on device|\bENOSPC\b|disk quota exceeded/i;

/** Whether a retry of a pull that failed with err could succeed. */
export function isRetryable(err: AgentError): boolean {
  return !PERMANENT_KINDS.includes(err.kind);
}

/**
 * err as an AgentError whose kind says what happened to the pull of image on a runtime of the given kind,
 * with a message that starts with what it means, keeps the runtime's reason, and has every secret of auth
 * (and no user name) redacted. On CRI the adapter's kind stands (an unknown answer stays Unknown); on Docker
 * a full disk, missing credentials and a missing image are recognised from its text and HTTP 404.
 */
export function classifyPullError(err: unknown, image: string, auth?: RegistryAuth, runtime?: RuntimeKind): AgentError {
  if (classified.has(err as object)) return err as AgentError;
  const out = classify(asAgentError(err), image, auth, runtime);
  classified.add(out);
  return out;
}

const classified = new WeakSet<object>();

/** The kind of a failed Docker pull, from the adapter's kind and dockerd's text. */
function dockerKind(e: AgentError, reason: string): ErrorKind {
  if (e.kind === 'Cancelled' || e.kind === 'DeadlineExceeded' || e.kind === 'ResourceExhausted' || e.kind === 'InvalidArgument') return e.kind;
  if (DISK_FULL.test(reason)) return 'ResourceExhausted';
  if (e.kind === 'Unauthenticated' || (e.kind !== 'NotFound' && UNAUTHORIZED.test(reason))) return 'Unauthenticated';
  // dockerd answers a pull of an image its registry lacks with HTTP 404 (the adapter keeps only the status).
  if (e.kind === 'NotFound' || MISSING.test(reason)) return 'NotFound';
  return e.kind;
}

function classify(e: AgentError, image: string, auth: RegistryAuth | undefined, runtime: RuntimeKind | undefined): AgentError {
  const reason = redact(e.message, auth);
  const kind = runtime === 'docker' ? dockerKind(e, reason) : e.kind;
  const opts = { cause: e };
  switch (kind) {
    case 'Cancelled':
    case 'DeadlineExceeded':
    case 'InvalidArgument':
      return new AgentError(kind, reason, opts);
    case 'ResourceExhausted':
      if (!DISK_FULL.test(reason)) return new AgentError(kind, reason, opts);
      return new AgentError(kind, `pull of ${image}: no space left on the image filesystem (${reason})`, opts);
    case 'Unauthenticated': {
      // No user name either: the message reaches other callers' logs and the restart journal.
      const what = auth ? 'the registry rejected the credentials given for it' : 'the registry requires credentials and none were given for it';
      return new AgentError(kind, `pull of ${image}: ${what} (${reason})`, opts);
    }
    case 'NotFound':
      return new AgentError(kind, `pull of ${image}: image not found in its registry (${reason})`, opts);
    case 'Unknown':
      return new AgentError(kind, `pull of ${image} failed with an answer the agent does not know (${reason})`, opts);
    default:
      return new AgentError(kind, `pull of ${image} failed: ${reason}`, opts);
  }
}
