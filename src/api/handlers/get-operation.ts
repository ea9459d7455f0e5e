// GetOperation: one operation record by id (or unique prefix).
import type * as grpc from '@grpc/grpc-js';
import type { Engine } from '../../engine/engine.js';
import type { GetOperationRequest__Output } from '../../gen/inplace/v1/GetOperationRequest.js';
import type { Operation } from '../../gen/inplace/v1/Operation.js';
import { operationToWire } from '../convert.js';
import { unary } from './unary.js';
import { validateOperationId } from '../validate.js';

/** Handler factory for GetOperation. */
export function getOperationHandler(engine: Engine): grpc.handleUnaryCall<GetOperationRequest__Output, Operation> {
  return unary(async (req) => {
    validateOperationId(req.id);
    return operationToWire(engine.get(req.id));
  });
}
