// What a failed pull means for the caller: which kind of error it is, whether a retry can help, and a
// message that names the image and never a secret.
import { AgentError, asAgentError, type ErrorKind } from '../errors.js';
import type { RegistryAuth, RuntimeKind } from '../runtime/types.js';
import { redact } from './auth.js';

/** Kinds a retry cannot heal: the image does not exist, the credentials are wrong, the reference is bad, the disk is full. */
export const PERMANENT_KINDS: readonly ErrorKind[] = ['NotFound', 'Unauthenticated', 'InvalidArgument', 'Cancelled', 'ResourceExhausted'];

// Runtimes report registry answers only as text (containerd's CRI returns gRPC Unknown with the resolver's
// message; Docker's JSON stream carries an error string), so these are recognised by their fixed wording.
const UNAUTHORIZED = /\b401\b|unauthorized|authentication required|no basic auth credentials|access to the resource is denied|denied: requested access/i;
// Only the registry's own answers: containerd also says "not found" (with gRPC NOT_FOUND) for its own content
// store ("content digest sha256:…: not found"), which says nothing about the image in the registry.
const MISSING =
  /manifest unknown|name unknown|blob unknown|repository does not exist|failed to resolve reference\b.*\bnot found\b|manifest for \S+ not found|content at \S+ not found|\b404\b/i;
// A full image filesystem: containerd reports it as a plain Go error (gRPC UNKNOWN or INTERNAL), Docker as text.
const DISK_FULL = /no space left on device|\bENOSPC\b|disk quota exceeded/i;

/** Whether a retry of a pull that failed with err could succeed. */
export function isRetryable(err: AgentError): boolean {
  return !PERMANENT_KINDS.includes(err.kind);
}

/**
 * err as an AgentError whose kind says what happened to the pull of image on a runtime of the given kind (an
 * adapter's Unauthenticated or InvalidArgument is kept; a full disk is ResourceExhausted; a missing image is
 * recognised from the registry's answer, or from Docker's HTTP 404; an Unknown/Internal one is recognised
 * from the registry's answer), with a message that starts with what it means, keeps the runtime's reason,
 * and has every secret of auth (and no user name) redacted.
 */
export function classifyPullError(err: unknown, image: string, auth?: RegistryAuth, runtime?: RuntimeKind): AgentError {
  if (classified.has(err as object)) return err as AgentError;
  const out = classify(asAgentError(err), image, auth, runtime);
  classified.add(out);
  return out;
}

const classified = new WeakSet<object>();

function classify(e: AgentError, image: string, auth: RegistryAuth | undefined, runtime: RuntimeKind | undefined): AgentError {
  const reason = redact(e.message, auth);
  if (e.kind === 'Cancelled' || e.kind === 'DeadlineExceeded' || e.kind === 'ResourceExhausted') {
    return new AgentError(e.kind, reason, { cause: e });
  }
  if (e.kind !== 'InvalidArgument' && DISK_FULL.test(reason)) {
    return new AgentError('ResourceExhausted', `pull of ${image}: no space left on the image filesystem (${reason})`, { cause: e });
  }
  if (e.kind === 'Unauthenticated' || (e.kind !== 'NotFound' && UNAUTHORIZED.test(reason))) {
    // No user name either: the message reaches other callers' logs and the restart journal.
    const what = auth ? 'the registry rejected the credentials given for it' : 'the registry requires credentials and none were given for it';
    return new AgentError('Unauthenticated', `pull of ${image}: ${what} (${reason})`, { cause: e });
  }
  // dockerd answers a pull of an image its registry lacks with HTTP 404 (the adapter keeps only the status);
  // CRI's NOT_FOUND is also containerd's own content store ("content digest …: not found"), so there only
  // the registry's wording says the image is missing.
  if ((e.kind === 'NotFound' && runtime === 'docker') || (e.kind !== 'InvalidArgument' && MISSING.test(reason))) {
    return new AgentError('NotFound', `pull of ${image}: image not found in its registry (${reason})`, { cause: e });
  }
  if (e.kind === 'InvalidArgument') return new AgentError('InvalidArgument', reason, { cause: e });
  // Any other NotFound is the runtime's own (a blob gone from its content store): not a missing image, and
  // a new attempt may heal it.
  const kind = e.kind === 'NotFound' ? 'Internal' : e.kind;
  return new AgentError(kind, `pull of ${image} failed: ${reason}`, { cause: e });
}
