// WatchOperation: the operation now, then on every change, until it ends or the caller goes away.
import type * as grpc from '@grpc/grpc-js';
import type { Engine } from '../../engine/engine.js';
import { isTerminal, type Operation } from '../../engine/operation.js';
import type { WatchOperationRequest__Output } from '../../gen/inplace/v1/WatchOperationRequest.js';
import type { Operation as WireOperation } from '../../gen/inplace/v1/Operation.js';
import { operationToWire } from '../convert.js';
import { toServiceError } from '../status.js';
import { AgentError } from '../../errors.js';
import { validateOperationId } from '../validate.js';

/** Handler factory for WatchOperation. */
export function watchOperationHandler(engine: Engine): grpc.handleServerStreamingCall<WatchOperationRequest__Output, WireOperation> {
  return (call) => {
    let op: Operation;
    try {
      validateOperationId(call.request.id);
      op = engine.get(call.request.id);
    } catch (err) {
      // On a server stream, destroy() sends no status: emitting the error does.
      call.emit('error', toServiceError(err));
      return;
    }
    const id = op.id;
    const onChange = (o: Operation) => {
      if (o.id !== id) return;
      call.write(operationToWire(o));
      if (isTerminal(o.state)) done();
    };
    const unsubscribe = () => {
      engine.off('change', onChange);
      engine.off('drained', onDrained);
    };
    const done = () => {
      unsubscribe();
      call.end();
    };
    // The agent is stopping before the operation ended: say so; it resumes when the agent starts again.
    const onDrained = () => {
      unsubscribe();
      call.emit('error', toServiceError(new AgentError('Unavailable', `the agent is shutting down; operation ${id} resumes when it starts again`)));
    };
    call.on('cancelled', unsubscribe);
    engine.on('change', onChange);
    engine.once('drained', onDrained);
    call.write(operationToWire(op));
    if (isTerminal(op.state)) done();
  };
}
