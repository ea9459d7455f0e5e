// ListOperations: known operations, newest first, optionally of one pod.
import type * as grpc from '@grpc/grpc-js';
import type { Engine } from '../../engine/engine.js';
import type { ListOperationsRequest__Output } from '../../gen/inplace/v1/ListOperationsRequest.js';
import type { ListOperationsResponse } from '../../gen/inplace/v1/ListOperationsResponse.js';
import { operationToWire } from '../convert.js';
import { unary } from './unary.js';
import { validatePodFilter } from '../validate.js';

/** Handler factory for ListOperations. */
export function listOperationsHandler(engine: Engine): grpc.handleUnaryCall<ListOperationsRequest__Output, ListOperationsResponse> {
  return unary(async (req) => {
    validatePodFilter(req.pod);
    return { operations: engine.list(req.pod || undefined).map(operationToWire) };
  });
}
