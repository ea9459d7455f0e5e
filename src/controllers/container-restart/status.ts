// The status of a ContainerRestart, computed from the agent's operation record: pure functions of their inputs.
import type { Operation, OperationState } from '../../engine/operation.js';
import { Reasons } from '../../engine/reasons.js';
import { REASON_PENDING, REASON_REFUSED, REASON_SUCCEEDED, SUCCEEDED_CONDITION, type ContainerRestart, type ContainerRestartCondition, type ContainerRestartPhase, type ContainerRestartStatus } from './types.js';
import { keepTransition } from '../../k8s/conditions.js';
import { sameJson } from '../../same-json.js';

export { REASON_REFUSED, SUCCEEDED_CONDITION } from './types.js';

const PHASE: Record<OperationState, ContainerRestartPhase> = {
  Pending: 'Pending',
  Pulling: 'Running',
  Recreating: 'Running',
  Verifying: 'Running',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  RolledBack: 'Failed',
  Cancelled: 'Failed',
};

/** The phase a ContainerRestart shows for an operation state. */
export function phaseOf(state: OperationState): ContainerRestartPhase {
  return PHASE[state];
}

/** The condition, keeping the previous lastTransitionTime unless its status changed. */
function condition(prev: ContainerRestartStatus | undefined, next: Omit<ContainerRestartCondition, 'lastTransitionTime'>, now: string): ContainerRestartCondition {
  return keepTransition<ContainerRestartCondition>(prev?.conditions, next, now);
}

/** The status recorded when the agent takes the request, before the operation is submitted. */
export function claimedStatus(cr: ContainerRestart, operationId: string, nodeName: string, agentId: string, now: string): ContainerRestartStatus {
  return {
    phase: 'Pending',
    operationId,
    operationState: 'Pending',
    nodeName,
    agentId,
    observedGeneration: cr.metadata.generation,
    startTime: now,
    summary: cr.spec.containers.map((c) => `${c.name}:Waiting`).join(','),
    conditions: [condition(cr.status, { type: SUCCEEDED_CONDITION, status: 'Unknown', reason: REASON_PENDING, message: `taken by the agent on node ${nodeName}` }, now)],
  };
}

/** The final status of a request the agent refused before touching anything; reason defaults to Refused. */
export function refusedStatus(cr: ContainerRestart, message: string, nodeName: string, agentId: string, now: string, reason = REASON_REFUSED): ContainerRestartStatus {
  return {
    ...cr.status,
    phase: 'Failed',
    operationState: 'Failed',
    nodeName,
    agentId: cr.status?.agentId ?? agentId,
    observedGeneration: cr.metadata.generation,
    startTime: cr.status?.startTime ?? now,
    completionTime: now,
    message,
    reason,
    conditions: [condition(cr.status, { type: SUCCEEDED_CONDITION, status: 'False', reason, message }, now)],
  };
}

/** The status that reflects an operation; now is used only for times that change with this write. */
export function statusFromOperation(cr: ContainerRestart, op: Operation, nodeName: string, now: string): ContainerRestartStatus {
  const phase = phaseOf(op.state);
  const finished = phase === 'Succeeded' || phase === 'Failed';
  const message = op.error ?? op.containers.find((c) => c.error)?.error;
  // The operation's reason, set where it failed (a constant of engine/reasons.ts).
  const reason = phase === 'Failed' ? (op.reason ?? op.containers.find((c) => c.reason)?.reason ?? Reasons.ReplacementFailed) : undefined;
  const cond: Omit<ContainerRestartCondition, 'lastTransitionTime'> =
    phase === 'Succeeded'
      ? { type: SUCCEEDED_CONDITION, status: 'True', reason: REASON_SUCCEEDED, message: 'every container restarted and verified' }
      : phase === 'Failed'
        ? { type: SUCCEEDED_CONDITION, status: 'False', reason, message: message ?? op.state }
        : { type: SUCCEEDED_CONDITION, status: 'Unknown', reason: op.state, message: `operation ${op.state}` };
  const status: ContainerRestartStatus = {
    phase,
    operationId: op.id,
    operationState: op.state,
    nodeName,
    agentId: cr.status?.agentId,
    podIP: op.podIp || undefined,
    observedGeneration: cr.metadata.generation,
    startTime: cr.status?.startTime ?? op.createdAt,
    completionTime: finished ? (cr.status?.completionTime ?? op.finishedAt ?? now) : undefined,
    summary: op.containers.map((c) => `${c.name}:${c.step}`).join(','),
    message,
    reason,
    containers: op.containers.map((c) => ({
      name: c.name,
      state: c.step,
      oldContainerID: c.oldId || undefined,
      newContainerID: c.newId || undefined,
      oldImage: c.oldImage || undefined,
      newImage: c.newImage || undefined,
      exitCode: c.exitCode,
      downtimeMilliseconds: c.downtimeMs,
      traffic: c.traffic,
      unservedMilliseconds: c.unservedMs,
      message: c.error,
      reason: c.reason,
    })),
    conditions: [condition(cr.status, cond, now)],
  };
  return dropUndefined(status);
}

/** A copy without undefined fields, so that two equal statuses compare equal after a round trip. */
export function dropUndefined<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** Whether two statuses say the same thing (ignoring key order). */
export function sameStatus(a: ContainerRestartStatus | undefined, b: ContainerRestartStatus | undefined): boolean {
  return sameJson(a ?? {}, b ?? {});
}


/** cr without the claim of operation opId in its status (as it was before the claim), if its status holds that claim. */
export function unclaimed(cr: ContainerRestart, opId: string): ContainerRestart {
  if (cr.status?.operationId !== opId) return cr;
  const { operationId: _id, operationState: _state, summary: _summary, startTime: _start, conditions: _conditions, phase: _phase, ...rest } = cr.status;
  return { ...cr, status: rest };
}
