// What a failed pull means for the caller: which kind of error it is, whether a retry can help, and a
// message that names the image and never a secret.
import { AgentError, asAgentError, type ErrorKind } from '../errors.js';
import type { RegistryAuth } from '../runtime/types.js';
import { redact } from './auth.js';

/** Kinds a retry cannot heal: the image does not exist, the credentials are wrong, the reference is bad, the disk is full. */
export const PERMANENT_KINDS: readonly ErrorKind[] = ['NotFound', 'Unauthenticated', 'InvalidArgument', 'Cancelled', 'ResourceExhausted'];

// Each adapter gives a failed pull its kind (CRI from its table of the messages containerd really sends,
// runtime/cri/pull-messages.ts; Docker from dockerd's wording, runtime/docker/pull-errors.ts); here that
// kind is taken as it is. A full disk, the kernel's ENOSPC/EDQUOT text, gets a message that says so.
const DISK_FULL = /no space left on device|\bENOSPC\b|disk quota exceeded/i;

/** Whether a retry of a pull that failed with err could succeed. */
export function isRetryable(err: AgentError): boolean {
  return !PERMANENT_KINDS.includes(err.kind);
}

/**
 * err as an AgentError whose kind (the adapter's: an unknown answer stays Unknown) says what happened to the
 * pull of image, with a message that starts with what it means, keeps the runtime's reason, and has every
 * secret of auth (and no user name) redacted.
 */
export function classifyPullError(err: unknown, image: string, auth?: RegistryAuth): AgentError {
  if (classified.has(err as object)) return err as AgentError;
  const out = classify(asAgentError(err), image, auth);
  classified.add(out);
  return out;
}

const classified = new WeakSet<object>();

function classify(e: AgentError, image: string, auth: RegistryAuth | undefined): AgentError {
  const reason = redact(e.message, auth);
  const kind = e.kind;
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
