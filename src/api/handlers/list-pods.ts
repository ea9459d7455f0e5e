// ListPods: the pods and containers the agent's runtime sees.
import type * as grpc from '@grpc/grpc-js';
import type { Engine } from '../../engine/engine.js';
import type { ListPodsRequest__Output } from '../../gen/inplace/v1/ListPodsRequest.js';
import type { ListPodsResponse } from '../../gen/inplace/v1/ListPodsResponse.js';
import { podToWire } from '../convert.js';
import { unary } from './unary.js';

/** Handler factory for ListPods. */
export function listPodsHandler(engine: Engine, runtimeKind: string): grpc.handleUnaryCall<ListPodsRequest__Output, ListPodsResponse> {
  return unary(async () => ({ pods: (await engine.listPods()).map(podToWire), runtime: runtimeKind }));
}
