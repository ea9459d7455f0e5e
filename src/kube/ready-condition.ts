// The agent's Pod condition `inplace-agent.io/ready`: what it says while the agent works on a pod and after,
// and the pods/status patch that writes it. The patch touches this one condition (conditions merge by type),
// keeps lastTransitionTime when the status does not change, and carries the pod's generation.
import type { V1Pod, V1PodCondition } from '../k8s/client.js';

/** The condition type; a pod lists it in spec.readinessGates to be kept out of Services while restarted. */
export const READY_CONDITION = 'inplace-agent.io/ready';

/** Fixed reasons of the condition. */
export const ConditionReasons = {
  /** Set on a pod that gates on the condition and lacks it. */
  Ready: 'Ready',
  Draining: 'Draining',
  Restarting: 'Restarting',
  Restarted: 'Restarted',
  RolledBack: 'RolledBack',
  /** Only when a container is left not running. */
  RestartFailed: 'RestartFailed',
} as const;

/** What the condition should say. */
export interface ConditionWant {
  status: 'True' | 'False';
  reason: string;
  message: string;
}

/** The pod's current condition of this type, if any. */
export function currentCondition(pod: V1Pod): V1PodCondition | undefined {
  return pod.status?.conditions?.find((c) => c.type === READY_CONDITION);
}

/** Whether the pod lists the condition in its readinessGates. */
export function gatesOnCondition(pod: V1Pod): boolean {
  return (pod.spec?.readinessGates ?? []).some((g) => g.conditionType === READY_CONDITION);
}

/**
 * The strategic-merge patch of pods/status that makes the condition say `want`; undefined when it says so
 * already. lastTransitionTime moves only when the status changes.
 */
export function conditionPatch(pod: V1Pod, want: ConditionWant, now: Date): object | undefined {
  const cur = currentCondition(pod);
  const generation = pod.metadata?.generation;
  if (cur && cur.status === want.status && cur.reason === want.reason && cur.message === want.message && (generation === undefined || cur.observedGeneration === generation)) {
    return undefined;
  }
  const since = cur && cur.status === want.status && cur.lastTransitionTime ? new Date(cur.lastTransitionTime) : now;
  const condition: Record<string, unknown> = {
    type: READY_CONDITION,
    status: want.status,
    reason: want.reason,
    message: want.message,
    lastTransitionTime: since.toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
  if (generation !== undefined) condition.observedGeneration = generation;
  return { status: { conditions: [condition] } };
}
