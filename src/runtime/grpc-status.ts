// The kind of error each gRPC status code stands for, shared by the adapters that speak gRPC (CRI and
// containerd's own API); each adds what its runtime means beyond the code.
import { status as Status } from '@grpc/grpc-js';
import type { ErrorKind } from '../errors.js';

const kindByCode: Partial<Record<Status, ErrorKind>> = {
  [Status.CANCELLED]: 'Cancelled',
  [Status.INVALID_ARGUMENT]: 'InvalidArgument',
  [Status.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
  [Status.NOT_FOUND]: 'NotFound',
  // Our kinds have no AlreadyExists: the caller has to change something (a name, an attempt) first.
  [Status.ALREADY_EXISTS]: 'FailedPrecondition',
  [Status.PERMISSION_DENIED]: 'Unauthenticated',
  [Status.RESOURCE_EXHAUSTED]: 'ResourceExhausted',
  [Status.FAILED_PRECONDITION]: 'FailedPrecondition',
  [Status.ABORTED]: 'Aborted',
  [Status.OUT_OF_RANGE]: 'InvalidArgument',
  // The runtime does not offer the call at all.
  [Status.UNIMPLEMENTED]: 'FailedPrecondition',
  [Status.INTERNAL]: 'Internal',
  [Status.UNAVAILABLE]: 'Unavailable',
  [Status.DATA_LOSS]: 'Internal',
  [Status.UNAUTHENTICATED]: 'Unauthenticated',
};

/** The kind a status code stands for; undefined for OK and UNKNOWN, whose meaning is in the message. */
export function kindOfStatus(code: Status): ErrorKind | undefined {
  return kindByCode[code];
}
