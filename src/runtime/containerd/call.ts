// The one way this folder calls containerd's own API: a unary call in a containerd namespace, under a
// deadline, its failure turned into an AgentError that names the call, its subject and the socket.
import * as grpc from '@grpc/grpc-js';
import { AgentError } from '../../errors.js';
import { kindOfStatus } from '../grpc-status.js';

/** containerd's socket as a gRPC target: a bare path becomes `unix://path`. */
export function containerdTarget(address: string): string {
  return address.startsWith('/') ? `unix://${address}` : address;
}

/** Where and how a call is made. */
export interface CallScope {
  /** The gRPC target (`unix:///…`). */
  endpoint: string;
  namespace: string;
  timeoutMs: number;
}

/** A callback-style unary call of a generated client. */
export type UnaryInvoke<T> = (md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, value?: T) => void) => unknown;

/**
 * Makes one unary call. `op` names the RPC (`Images.Get`), `what` its subject ('' for none). A runtime that
 * serves no such service (CRI-O, anything serving CRI without containerd's API) is FailedPrecondition.
 */
export function containerdCall<T>(scope: CallScope, op: string, what: string, invoke: UnaryInvoke<T>): Promise<T> {
  const md = new grpc.Metadata();
  md.set('containerd-namespace', scope.namespace);
  const subject = what ? ` ${what}` : '';
  return new Promise<T>((resolve, reject) => {
    invoke(md, { deadline: Date.now() + scope.timeoutMs }, (err, value) => {
      if (!err) return resolve(value as T);
      if (err.code === grpc.status.UNIMPLEMENTED) {
        return reject(new AgentError('FailedPrecondition', `containerd ${op}${subject}: the runtime at ${scope.endpoint} does not serve containerd's own API (${err.details})`, { cause: err }));
      }
      const kind = kindOfStatus(err.code) ?? 'Unknown';
      reject(new AgentError(kind, `containerd ${op}${subject} on ${scope.endpoint}: ${err.details || err.message}`, { cause: err }));
    });
  });
}
