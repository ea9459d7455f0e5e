// Restart: validates the request against the node and queues the operation; replies with it (Pending).
import type * as grpc from '@grpc/grpc-js';
import type { Engine } from '../../engine/engine.js';
import type { RestartDefaults } from '../../engine/operation.js';
import type { RestartRequest__Output } from '../../gen/inplace/v1/RestartRequest.js';
import type { Operation } from '../../gen/inplace/v1/Operation.js';
import type { RuntimeCapabilities } from '../../runtime/runtime.js';
import { operationToWire } from '../convert.js';
import { unary } from './unary.js';
import { validateRestart } from '../validate.js';

/** Handler factory for Restart; container names are bounded by the runtime's capabilities. */
export function restartHandler(engine: Engine, defaults: RestartDefaults, capabilities: Pick<RuntimeCapabilities, 'maxContainerName'>): grpc.handleUnaryCall<RestartRequest__Output, Operation> {
  return unary(async (req) => {
    validateRestart(req, capabilities.maxContainerName);
    const op = await engine.restart({
      pod: req.pod,
      containers: req.containers,
      images: { ...req.images },
      graceSeconds: req.graceSet ? req.graceSeconds : defaults.graceSeconds,
      minReadyMs: req.minReadySet ? Number(req.minReadyMs) : defaults.minReadyMs,
      timeoutMs: Number(req.timeoutMs) > 0 ? Number(req.timeoutMs) : defaults.timeoutMs,
      skipPreStop: req.skipPreStop,
    }, {
      dryRun: req.dryRun,
      requested: {
        graceSeconds: req.graceSet ? req.graceSeconds : undefined,
        minReadyMs: req.minReadySet ? Number(req.minReadyMs) : undefined,
        timeoutMs: Number(req.timeoutMs) > 0 ? Number(req.timeoutMs) : undefined,
      },
    });
    return operationToWire(op);
  });
}
