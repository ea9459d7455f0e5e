// The words the pod's condition and the Restarted event use for a finished restart, in one place: the way
// back (before the operation ends) and the end of the operation write the same condition.
import type { ContainerTarget, Operation } from '../engine/operation.js';

/** One container's restart, as the condition and events say it. */
export function describeRestart(c: ContainerTarget): string {
  return `${c.name} (${c.oldImage === c.newImage ? c.newImage : `${c.oldImage} -> ${c.newImage}`}${c.downtimeMs !== undefined ? `, down ${c.downtimeMs} ms` : ''})`;
}

/** The containers of an operation that the kubelet strategy touched (those that reached Draining). */
export function touchedContainers(op: Operation, strategy: string): ContainerTarget[] {
  return op.containers.filter((c) => c.strategy === strategy && c.steps.some((s) => s.step === 'Draining'));
}
