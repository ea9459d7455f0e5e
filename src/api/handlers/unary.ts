// Adapts an async function to a grpc-js unary handler, mapping thrown errors to gRPC statuses.
import type * as grpc from '@grpc/grpc-js';
import { toServiceError } from '../status.js';

/** A unary handler running fn and replying with its result or its error's status. */
export function unary<Req, Res>(fn: (req: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    fn(call.request, call).then(
      (res) => callback(null, res),
      (err: unknown) => callback(toServiceError(err)),
    );
  };
}
