// Reads a pod again after a successful restart, so that what is reported about its sandbox and IP is what
// the runtime says then, not what it said before.
import { AgentError } from '../errors.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Operation } from './operation.js';

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
