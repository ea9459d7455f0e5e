// WatchOperation: the operation now, then on every change, until it ends or the caller goes away.
import type * as grpc from '@grpc/grpc-js';
import type { Engine } from '../../engine/engine.js';
import { isTerminal, type Operation } from '../../engine/operation.js';
import type { WatchOperationRequest__Output } from '../../gen/inplace/v1/WatchOperationRequest.js';
import type { Operation as WireOperation } from '../../gen/inplace/v1/Operation.js';
import { operationToWire } from '../convert.js';
import { toServiceError } from '../status.js';

/** Handler factory for WatchOperation. */
export function watchOperationHandler(engine: Engine): grpc.handleServerStreamingCall<WatchOperationRequest__Output, WireOperation> {
  return (call) => {
    let op: Operation;
    try {
      op = engine.get(call.request.id);
    } catch (err) {
      call.destroy(toServiceError(err));
      return;
    }
    const id = op.id;
    const onChange = (o: Operation) => {
      if (o.id !== id) return;
      call.write(operationToWire(o));
      if (isTerminal(o.state)) done();
    };
    const done = () => {
      engine.off('change', onChange);
      engine.off('drained', done);
      call.end();
    };
    call.on('cancelled', () => {
      engine.off('change', onChange);
      engine.off('drained', done);
    });
    engine.on('change', onChange);
    // The agent is stopping: the stream ends; the operation resumes at the next start.
    engine.once('drained', done);
    call.write(operationToWire(op));
    if (isTerminal(op.state)) done();
  };
}
