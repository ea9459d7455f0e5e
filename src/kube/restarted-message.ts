// The words the pod's condition and the Restarted event use for a finished restart, in one place: the way
// back (before the operation ends), the gate opened at the start and the end of the operation write the same
// condition.
import type { ContainerTarget, Operation } from '../engine/operation.js';

/** A container's image, or its old and new image. */
const images = (c: ContainerTarget) => (c.oldImage === c.newImage ? c.newImage : `${c.oldImage} -> ${c.newImage}`);

/** One container's restart, as the Restarted event says it: its images and its downtime. */
export function describeRestart(c: ContainerTarget): string {
  return `${c.name} (${images(c)}${c.downtimeMs !== undefined ? `, down ${c.downtimeMs} ms` : ''})`;
}

/**
 * The pod condition's message for a finished restart of these containers: their images, not the downtime. The
 * condition opened at the new instance's first sight (before its downtime is known) and the one written at the end
 * are then the same, and the end writes nothing (one write a pod; the downtime is in the ContainerRestart's status).
 */
export function restartedMessage(touched: ContainerTarget[]): string {
  return `restarted ${touched.map((c) => `${c.name} (${images(c)})`).join(', ')}`;
}

/** The containers of an operation that the kubelet strategy touched (those that reached Draining). */
export function touchedContainers(op: Operation, strategy: string): ContainerTarget[] {
  return op.containers.filter((c) => c.strategy === strategy && c.steps.some((s) => s.step === 'Draining'));
}
