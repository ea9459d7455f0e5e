// What a failed pull means for the caller: which kind of error it is, whether a retry can help, and a
// message that names the image and never a secret.
import { AgentError, asAgentError, type ErrorKind } from '../errors.js';
import type { RegistryAuth } from '../runtime/types.js';
import { redact } from './auth.js';

/** Kinds a retry cannot heal: the image does not exist, the credentials are wrong, the reference is bad. */
export const PERMANENT_KINDS: readonly ErrorKind[] = ['NotFound', 'Unauthenticated', 'InvalidArgument', 'Cancelled', 'ResourceExhausted'];

// Runtimes report registry answers only as text (containerd's CRI returns gRPC Unknown with the resolver's
// message; Docker's JSON stream carries an error string), so these are recognised by their fixed wording.
const UNAUTHORIZED = /\b401\b|unauthorized|authentication required|no basic auth credentials|access to the resource is denied|denied: requested access/i;
const MISSING = /manifest unknown|\bnot found\b|\b404\b|name unknown|repository does not exist/i;

/** Whether a retry of a pull that failed with err could succeed. */
export function isRetryable(err: AgentError): boolean {
  return !PERMANENT_KINDS.includes(err.kind);
}

/**
 * err as an AgentError whose kind says what happened to the pull of image (an adapter's NotFound,
 * Unauthenticated or InvalidArgument is kept; an Unknown/Internal one is recognised from the registry's
 * answer), with a message that starts with what it means, keeps the runtime's reason, and has every
 * secret of auth redacted.
 */
export function classifyPullError(err: unknown, image: string, auth?: RegistryAuth): AgentError {
  if (classified.has(err as object)) return err as AgentError;
  const out = classify(asAgentError(err), image, auth);
  classified.add(out);
  return out;
}

const classified = new WeakSet<object>();

function classify(e: AgentError, image: string, auth?: RegistryAuth): AgentError {
  const reason = redact(e.message, auth);
  if (e.kind === 'Cancelled' || e.kind === 'DeadlineExceeded' || e.kind === 'ResourceExhausted') {
    return new AgentError(e.kind, reason, { cause: e });
  }
  if (e.kind === 'Unauthenticated' || (e.kind !== 'NotFound' && UNAUTHORIZED.test(reason))) {
    const what = auth
      ? `the registry rejected the credentials${auth.username ? ` of user "${auth.username}"` : ''}`
      : 'the registry requires credentials and none were given for it';
    return new AgentError('Unauthenticated', `pull of ${image}: ${what} (${reason})`, { cause: e });
  }
  if (e.kind === 'NotFound' || (e.kind !== 'InvalidArgument' && MISSING.test(reason))) {
    return new AgentError('NotFound', `pull of ${image}: image not found in its registry (${reason})`, { cause: e });
  }
  if (e.kind === 'InvalidArgument') return new AgentError('InvalidArgument', reason, { cause: e });
  return new AgentError(e.kind, `pull of ${image} failed: ${reason}`, { cause: e });
}
