// CancelOperation: asks an operation to stop at its next safe point.
import type * as grpc from '@grpc/grpc-js';
import type { Engine } from '../../engine/engine.js';
import type { CancelOperationRequest__Output } from '../../gen/inplace/v1/CancelOperationRequest.js';
import type { Operation } from '../../gen/inplace/v1/Operation.js';
import { operationToWire } from '../convert.js';
import { unary } from './unary.js';
import { validateOperationId } from '../validate.js';

/** Handler factory for CancelOperation. */
export function cancelOperationHandler(engine: Engine): grpc.handleUnaryCall<CancelOperationRequest__Output, Operation> {
  return unary(async (req) => {
    validateOperationId(req.id);
    return operationToWire(await engine.cancel(req.id));
  });
}
