// Reads a pod again after a successful restart, so that what is reported about its sandbox and IP is what
// the runtime says then, not what it said before. The read begins as the last container's replacement is
// started (its old instance stopped), off the caller's path, unless the container is the pod itself.
import { AgentError } from '../errors.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ContainerTarget, Operation } from './operation.js';

/**
 * The pod's sandbox id and IP now. A Docker pod of one has no sandbox besides its container, so its
 * replacement is a pod of its own: it is read under the replacement's id. Undefined when it cannot be read.
 */
export async function readPodAfter(runtime: Runtime, op: Operation): Promise<{ podId: string; podIp: string } | undefined> {
  const candidates = [op.podId];
  const only = op.containers.length === 1 ? op.containers[0] : undefined;
  // The old container is removed only after the operation is reported, so a pod of one read under its old id
  // would still be found then, stopped and without an IP: its replacement is read first.
  if (only?.newId) {
    if (only.oldId === op.podId) candidates.unshift(only.newId);
    else candidates.push(only.newId);
  }
  for (const id of candidates) {
    try {
      const pod = await runtime.getPod(id);
      return { podId: pod.id, podIp: pod.ip };
    } catch (err) {
      if (!AgentError.is(err, 'NotFound')) return undefined;
    }
  }
  return undefined;
}

/**
 * Whether the pod's read may begin as t's replacement is started, in parallel with the start: t's old instance
 * is stopped by then, and starting a container changes neither a sandbox nor its IP. Not when t is the pod
 * itself (a Docker pod of one, whose replacement is a pod of its own, with an IP only once it runs).
 */
export function podReadableAtStart(op: Operation, t: ContainerTarget): boolean {
  return t.oldId !== op.podId && op.containers[op.containers.length - 1] === t;
}
