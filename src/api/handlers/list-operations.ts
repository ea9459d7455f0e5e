// ListOperations: known operations, newest first, optionally of one pod. A pod filter that names no pod the
// runtime has and no operation's pod is NotFound, so that a typo is not taken for "no operations".
import type * as grpc from '@grpc/grpc-js';
import type { Engine } from '../../engine/engine.js';
import { RefusalReasons } from '../../engine/reasons.js';
import { resolvePod } from '../../engine/pod-resolver.js';
import { AgentError } from '../../errors.js';
import type { ListOperationsRequest__Output } from '../../gen/inplace/v1/ListOperationsRequest.js';
import type { ListOperationsResponse } from '../../gen/inplace/v1/ListOperationsResponse.js';
import { quote } from '../../quote.js';
import { operationToWire } from '../convert.js';
import { unary } from './unary.js';
import { validatePodFilter } from '../validate.js';

/** Handler factory for ListOperations. */
export function listOperationsHandler(engine: Engine): grpc.handleUnaryCall<ListOperationsRequest__Output, ListOperationsResponse> {
  return unary(async (req) => {
    validatePodFilter(req.pod);
    const ops = engine.list(req.pod || undefined);
    if (req.pod && ops.length === 0 && !(await podExists(engine, req.pod))) {
      throw new AgentError('NotFound', `no pod ${quote(req.pod)} is known: it is not on this node and no operation names it`, { reason: RefusalReasons.PodNotFound });
    }
    return { operations: ops.map(operationToWire) };
  });
}

/** Whether the runtime has the pod arg names (an ambiguous prefix counts as existing). */
async function podExists(engine: Engine, arg: string): Promise<boolean> {
  try {
    resolvePod((await engine.listPods()).map((v) => v.pod), arg);
    return true;
  } catch (err) {
    if (AgentError.is(err, 'NotFound')) return false;
    if (AgentError.is(err, 'InvalidArgument')) return true;
    throw err;
  }
}
