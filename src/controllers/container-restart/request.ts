// From a ContainerRestart's spec to the engine's RestartRequest: the same request an RPC restart makes.
import { AgentError } from '../../errors.js';
import { RefusalReasons } from '../../engine/reasons.js';
import type { RestartDefaults } from '../../engine/operation.js';
import type { KubeletRequest } from '../../kube/kubelet/steps.js';
import { parseImageRef } from '../../image-ref.js';
import type { ContainerRestart } from './types.js';

/**
 * The engine request for a ContainerRestart; InvalidArgument for what the schema lets through but the agent
 * cannot honour (an unparsable image, a strategy it does not implement), before anything is touched.
 */
export function restartRequestFor(cr: ContainerRestart, defaults: RestartDefaults): KubeletRequest {
  const { spec } = cr;
  const s = spec.strategy ?? {};
  // An object stored before the CRD dropped Ignore (it acted as Fail) is refused rather than run as something else.
  if ((s.failurePolicy as string | undefined) === 'Ignore') {
    throw new AgentError('InvalidArgument', 'strategy.failurePolicy Ignore is not supported by this agent: use Fail (the pod is left as the failure left it) or Rollback', { reason: RefusalReasons.Unsupported });
  }
  const images: Record<string, string> = {};
  for (const c of spec.containers) {
    if (c.image === undefined) continue;
    try {
      parseImageRef(c.image);
    } catch (err) {
      throw new AgentError('InvalidArgument', `container ${c.name}: ${err instanceof Error ? err.message : String(err)}`, { reason: RefusalReasons.InvalidRequest });
    }
    images[c.name] = c.image;
  }
  return {
    pod: `${cr.metadata.namespace ?? 'default'}/${spec.podName}`,
    containers: spec.containers.map((c) => c.name),
    images,
    graceSeconds: s.gracePeriodSeconds ?? defaults.graceSeconds,
    minReadyMs: s.minReadySeconds !== undefined ? s.minReadySeconds * 1000 : defaults.minReadyMs,
    timeoutMs: spec.activeDeadlineSeconds !== undefined ? spec.activeDeadlineSeconds * 1000 : defaults.timeoutMs,
    // Read by the kubelet strategy; a standalone container that fails is always rolled back (its old config
    // runs again), and has no EndpointSlice address to drain.
    ...(s.failurePolicy !== undefined ? { failurePolicy: s.failurePolicy } : {}),
    ...(s.drainSeconds !== undefined ? { drainMs: s.drainSeconds * 1000 } : {}),
    // ordered false: the containers are stopped (or patched) together within the pod's one drain.
    ...(s.ordered === false ? { together: true } : {}),
  };
}
