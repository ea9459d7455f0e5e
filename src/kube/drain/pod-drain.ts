// One drain a pod: the containers an operation restarts through the kubelet are all replaced within the drain
// the first of them began, and the readiness gate opens once, after the last of them. Pure reads of the
// operation's record (as journaled), so that an agent that resumes an operation half way finds the drain the
// record says it did and does not drain the pod a second time.
import type { ContainerTarget, Operation, StepRecord } from '../../engine/operation.js';

/** How the Draining step of a container that shares its pod's drain begins. */
export const SHARED_NOTE = 'within the pod\'s one drain, begun for container';

/** The last step record of a kind (the one entered last). */
export function lastStep(t: ContainerTarget, step: StepRecord['step']): StepRecord | undefined {
  return [...t.steps].reverse().find((s) => s.step === step);
}

/** The containers of op that strategy restarts, in the order they go (touched yet or not). */
export function podTargets(op: Operation, strategy: string): ContainerTarget[] {
  return op.containers.filter((c) => c.strategy === strategy);
}

/** Whether t is the last container of op that strategy restarts: the one after which the gate opens. */
export function lastOfPod(op: Operation, t: ContainerTarget, strategy: string): boolean {
  return podTargets(op, strategy).at(-1) === t;
}

/**
 * The container of op (other than `except`) whose Draining step drained the pod: the one whose step records
 * what the drain waited on, not a share of it. Undefined while no drain of op has finished.
 */
export function podDrainer(op: Operation, strategy: string, except?: ContainerTarget): ContainerTarget | undefined {
  return podTargets(op, strategy).find((c) => {
    const detail = c === except ? undefined : lastStep(c, 'Draining')?.detail;
    return detail !== undefined && !detail.startsWith(SHARED_NOTE);
  });
}

/** The Draining step's note of a container that goes within the drain `by` began. */
export function sharedDrainNote(by: ContainerTarget): string {
  return `${SHARED_NOTE} ${by.name}`;
}

/** The steps of a container whose old instance was stopped, or its image patched (or is being). */
const REPLACED = new Set(['PreStop', 'Stopping', 'Stopped', 'Patching', 'Patched', 'Verifying', 'Verified']);

/**
 * The containers of op from t on, when they are the last the operation replaces and all are under way: every
 * earlier one is Done and every later one was replaced together with t (sequentially: t is the last). Empty
 * otherwise. The gate may open at the start only once the new instances of all of them are seen.
 */
export function lastGroup(op: Operation, t: ContainerTarget, strategy: string): ContainerTarget[] {
  const all = podTargets(op, strategy);
  const i = all.indexOf(t);
  if (i < 0 || !all.slice(0, i).every((c) => c.step === 'Done') || !all.slice(i + 1).every((c) => REPLACED.has(c.step))) return [];
  return all.slice(i);
}
