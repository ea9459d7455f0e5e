// Containers of a CRI runtime. ListContainers lacks start/finish times, exit codes and mounts, so each
// container's (non-verbose) status is read too, unless the caller asks for the list alone (brief);
// containerd answers the status from memory, but each is a call.
import { AgentError } from '../../errors.js';
import type { ContainerFilter } from '../runtime.js';
import type { Container } from '../types.js';
import type { CriClient } from './client.js';
import { toContainerFromListItem, toContainerFromStatus } from './convert.js';

/** Containers matching the filter. Containers removed while listing are left out. */
export async function listContainers(client: CriClient, filter: ContainerFilter = {}): Promise<Container[]> {
  const { containers } = await client.listContainers({
    filter: {
      podSandboxId: filter.podId ?? '',
      state: filter.runningOnly ? { state: 'CONTAINER_RUNNING' } : null,
      labelSelector: {},
    },
  });
  if (filter.brief) return containers.map(toContainerFromListItem);
  const out = await Promise.all(
    containers.map(async (c) => {
      try {
        const { status } = await client.containerStatus(c.id, false);
        return status ? toContainerFromStatus(status, c.podSandboxId, c) : undefined;
      } catch (err) {
        if (AgentError.is(err, 'NotFound')) return undefined;
        throw err;
      }
    }),
  );
  return out.filter((c): c is Container => c !== undefined);
}
