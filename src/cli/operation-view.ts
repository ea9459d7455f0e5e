// A ContainerRestart seen as the agent's operation record, so inplacectl prints it as it prints an RPC restart.
import type { operationToWire } from '../api/convert.js';
import type { ContainerRestart } from '../controllers/container-restart/types.js';

/** The agent's operation record, as the API's operationToWire takes it. */
export type OperationRecord = Parameters<typeof operationToWire>[0];

/** The operation a ContainerRestart's status describes (Pending until an agent has taken it). */
export function operationView(cr: ContainerRestart): OperationRecord {
  const st = cr.status ?? {};
  const ns = cr.metadata.namespace ?? 'default';
  const now = new Date().toISOString();
  return {
    id: st.operationId ?? cr.metadata.uid ?? '',
    podId: '',
    podName: `${ns}/${cr.spec.podName}`,
    podIp: st.podIP ?? '',
    state: (st.operationState as OperationRecord['state'] | undefined) ?? 'Pending',
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
        step: (s?.state as OperationRecord['containers'][number]['step'] | undefined) ?? 'Waiting',
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
