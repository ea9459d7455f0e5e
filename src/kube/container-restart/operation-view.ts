// A ContainerRestart seen as the agent's Operation record, so inplacectl prints it as it prints an RPC restart.
import type { ContainerStep, Operation, OperationState } from '../../engine/operation.js';
import { isRefusal } from '../../engine/reasons.js';
import { REASON_REFUSED, SUCCEEDED_CONDITION } from './status.js';
import type { ContainerRestart } from './types.js';

/** The operation a ContainerRestart's status describes (Pending until an agent has taken it). */
export function operationView(cr: ContainerRestart): Operation {
  const st = cr.status ?? {};
  const ns = cr.metadata.namespace ?? 'default';
  const now = new Date().toISOString();
  return {
    id: st.operationId ?? cr.metadata.uid ?? '',
    podId: '',
    podName: `${ns}/${cr.spec.podName}`,
    podIp: st.podIP ?? '',
    state: (st.operationState as OperationState | undefined) ?? 'Pending',
    request: {
      pod: `${ns}/${cr.spec.podName}`,
      containers: cr.spec.containers.map((c) => c.name),
      images: Object.fromEntries(cr.spec.containers.filter((c) => c.image).map((c) => [c.name, c.image as string])),
      graceSeconds: cr.spec.strategy?.gracePeriodSeconds ?? 0,
      minReadyMs: (cr.spec.strategy?.minReadySeconds ?? 0) * 1000,
      timeoutMs: (cr.spec.activeDeadlineSeconds ?? 0) * 1000,
    },
    containers: cr.spec.containers.map((c) => {
      const s = st.containers?.find((x) => x.name === c.name);
      return {
        name: c.name,
        oldId: s?.oldContainerID ?? '',
        oldRuntimeName: '',
        oldImage: s?.oldImage ?? '',
        newImage: s?.newImage ?? c.image ?? '',
        newAttempt: 0,
        newId: s?.newContainerID ?? '',
        rollbackId: '',
        step: (s?.state as ContainerStep | undefined) ?? 'Waiting',
        steps: [],
        exitCode: s?.exitCode,
        error: s?.message,
        downtimeMs: s?.downtimeMilliseconds,
        reason: s?.reason,
      };
    }),
    createdAt: st.startTime ?? now,
    updatedAt: now,
    finishedAt: st.completionTime,
    error: st.message,
    reason: st.reason,
  };
}

/** Why the agent refused the request without touching anything, when it did. */
export function refusal(cr: ContainerRestart): string | undefined {
  const c = cr.status?.conditions?.find((x) => x.type === SUCCEEDED_CONDITION);
  return c?.status === 'False' && (c.reason === REASON_REFUSED || isRefusal(c.reason)) ? (c.message ?? cr.status?.message ?? 'refused') : undefined;
}
