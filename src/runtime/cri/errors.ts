// The one place where CRI gRPC failures become AgentErrors. The status code decides the kind; only for
// UNKNOWN, which containerd uses for many plain Go errors ("...: not found"), is the message text consulted.
// PullImage is the exception: its kind comes from the table of containerd's real pull messages
// (pull-messages.ts), since there the code does not say whether the registry or containerd failed.
import { status as Status, type ServiceError } from '@grpc/grpc-js';
import { AgentError, type ErrorKind } from '../../errors.js';
import { kindOfStatus } from '../grpc-status.js';
import { matchPullMessage } from './pull-messages.js';

/** What a failed call was about, so that the message can name it. */
export interface CallContext {
  /** The RPC, e.g. 'ContainerStatus'. */
  op: string;
  /** The thing the call was about, e.g. `container "abc123"`; '' when it is about the runtime itself. */
  what: string;
  /** The runtime endpoint, e.g. unix:///run/containerd/containerd.sock. */
  endpoint: string;
}


/** Message patterns for UNKNOWN, checked in order. */
const kindByUnknownText: [RegExp, ErrorKind][] = [
  // errdefs.ErrNotFound text; "no such file" is left out on purpose: exec of a missing binary says that.
  [/\bnot found\b|does not exist|no such (container|sandbox|image)\b/i, 'NotFound'],
  // "container is in CONTAINER_EXITED state" (start or exec of a stopped container).
  [/is in (CONTAINER|SANDBOX)_[A-Z]+ state/, 'FailedPrecondition'],
  [/\b(401 unauthorized|unauthorized|authentication required|access denied|denied: )/i, 'Unauthenticated'],
  [/already exists|is reserved for/i, 'FailedPrecondition'],
  [/context deadline exceeded|timeout .* exceeded/i, 'DeadlineExceeded'],
  [/context canceled/i, 'Cancelled'],
  // containerd's CRI plugin answers before it has loaded its state (just after a restart).
  [/server is not initialized yet/i, 'Unavailable'],
  // containerd lost its connection to a container's shim mid-call (the shim exiting or restarting): the call
  // can be made again (a kill that raced the container's own exit then finds it stopped).
  [/ttrpc: closed/i, 'Unavailable'],
  // StartContainer while another start of the same container is under way (its caller may have died).
  [/already in starting state/i, 'Aborted'],
];

/**
 * Whether a container's status says its start was cut short before its process ran because the caller of
 * StartContainer went away (containerd cancels the call's work with its context): reason StartError and a
 * message ending in "context canceled". Such a container never ran; it cannot be started again.
 */
export function startCutShort(reason: string, message: string): boolean {
  return reason === 'StartError' && /context canceled/i.test(message);
}

/** The AgentError kind for a gRPC status code and its details text. */
export function kindOf(code: number, details: string): ErrorKind {
  if (code === Status.UNKNOWN) {
    for (const [re, kind] of kindByUnknownText) if (re.test(details)) return kind;
    return 'Internal';
  }
  return kindOfStatus(code as Status) ?? 'Internal';
}

/** Codes that say what happened to the call itself, not what the runtime found: they keep their kind. */
const TRANSPORT_CODES: readonly number[] = [Status.CANCELLED, Status.DEADLINE_EXCEEDED, Status.UNAVAILABLE];

/**
 * The AgentError kind of a failed PullImage: the transport's kind for a cancelled, timed-out or unreachable
 * call, else the kind of the known message it carries, else Unknown (never a guess from a stray word).
 */
export function pullKindOf(code: number, details: string): ErrorKind {
  if (TRANSPORT_CODES.includes(code)) return kindOfStatus(code as Status) ?? 'Unknown';
  return matchPullMessage(details)?.kind ?? 'Unknown';
}

/** Whether err looks like a grpc-js call error. */
export function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as Partial<ServiceError>).code === 'number';
}

/** Converts a failed CRI call into an AgentError whose message names the thing it was about. */
export function fromGrpcError(err: unknown, ctx: CallContext): AgentError {
  if (err instanceof AgentError) return err;
  if (!isServiceError(err)) {
    const text = err instanceof Error ? err.message : String(err);
    return new AgentError('Internal', `${ctx.op} ${ctx.what || ctx.endpoint}: ${text}`, { cause: err });
  }
  // grpc-js appends an empty "Resolution note:" to connection failures.
  const details = (err.details || err.message).replace(/\s*Resolution note:\s*$/, '');
  const kind = ctx.op === 'PullImage' ? pullKindOf(err.code, details) : kindOf(err.code, details);
  return new AgentError(kind, messageFor(kind, details, ctx), { cause: err });
}

function messageFor(kind: ErrorKind, details: string, ctx: CallContext): string {
  const subject = ctx.what || `CRI runtime at ${ctx.endpoint}`;
  switch (kind) {
    case 'NotFound':
      return `${subject} not found (${ctx.op}: ${details})`;
    case 'Unavailable':
      return `CRI runtime at ${ctx.endpoint} is unavailable (${ctx.op}${ctx.what ? ' ' + ctx.what : ''}): ${details}`;
    case 'DeadlineExceeded':
      return `${ctx.op} ${subject}: deadline exceeded: ${details}`;
    default:
      return `${ctx.op} ${subject}: ${details}`;
  }
}
