// Writes a ContainerRestart's status with optimistic concurrency: a 409 Conflict (someone wrote the object
// since it was read) is answered by reading it again and recomputing the status from the fresh object.
import { AgentError } from '../../errors.js';
import { isConflict } from '../../k8s/api-error.js';
import type { ContainerRestartApi } from './api.js';
import { sameStatus } from './status.js';
import type { ContainerRestart, ContainerRestartStatus } from './types.js';

/** The calls the writer needs. */
export type StatusApi = Pick<ContainerRestartApi, 'get' | 'replaceStatus'>;

/** How many conflicts in a row one write accepts before giving up (Aborted). */
export const MAX_CONFLICTS = 5;

/**
 * Writes compute(object) as the status of cr, re-reading the object after each 409 and computing again, so a
 * status is never based on a stale read. compute returns undefined when there is nothing to write (another
 * agent took the object, say). Returns the object as last read or written; a status equal to the stored one
 * is not written again.
 */
export async function writeStatus(
  api: StatusApi,
  cr: ContainerRestart,
  compute: (current: ContainerRestart) => ContainerRestartStatus | undefined,
  onConflict?: (attempt: number) => void,
): Promise<ContainerRestart> {
  let current = cr;
  for (let attempt = 1; ; attempt++) {
    const status = compute(current);
    if (status === undefined || sameStatus(current.status, status)) return current;
    try {
      return await api.replaceStatus(current, status);
    } catch (err) {
      if (!isConflict(err)) throw err;
      onConflict?.(attempt);
      if (attempt >= MAX_CONFLICTS) {
        throw new AgentError('Aborted', `status of ContainerRestart ${current.metadata.namespace}/${current.metadata.name}: ${attempt} conflicts in a row`, { cause: err });
      }
      current = await api.get(current.metadata.namespace ?? 'default', current.metadata.name ?? '');
    }
  }
}
