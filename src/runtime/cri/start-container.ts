// Starting a created container. containerd refuses a StartContainer while another start of the same
// container is under way ("already in starting state"), as when an agent died mid-call and its successor
// starts again: that start is waited for, not turned into an error.
import type { Clock } from '../../clock.js';
import { AgentError } from '../../errors.js';
import type { CriClient } from './client.js';
import type { ContainerState } from '../types.js';
import { toContainerState } from './convert.js';
import { startCutShort } from './errors.js';

/** How long a start that is already under way is waited for, ms (containerd's own call deadline is ours). */
export const START_IN_PROGRESS_WAIT_MS = 60_000;

/** How often the container is looked at while another start is under way, ms. */
const START_POLL_MS = 100;

/**
 * Starts a created container. When a start is already under way, waits until the container leaves the
 * created state: resolves when it runs, and throws DeadlineExceeded when it is still starting after waitMs.
 * Throws Aborted when this start or the one under way was cut short before the container ran (its caller,
 * an agent killed mid-call, went away): the container cannot start any more and must be created again.
 */
export async function startContainer(client: CriClient, containerId: string, clock: Clock, waitMs = START_IN_PROGRESS_WAIT_MS): Promise<void> {
  try {
    await client.startContainer(containerId);
    return;
  } catch (err) {
    if (AgentError.is(err, 'FailedPrecondition')) await throwIfCutShort(client, containerId);
    if (!AgentError.is(err, 'Aborted')) throw err;
  }
  const until = clock.now() + waitMs;
  for (;;) {
    await clock.sleep(START_POLL_MS);
    const state = await throwIfCutShort(client, containerId);
    if (state === 'running') return;
    if (state !== 'created') throw new AgentError('FailedPrecondition', `StartContainer container "${containerId}": the start that was under way left it ${state}`);
    if (clock.now() > until) {
      throw new AgentError('DeadlineExceeded', `StartContainer container "${containerId}": a start already under way did not finish within ${waitMs / 1000}s`);
    }
  }
}

/** The container's state; throws Aborted when its status says a start was cut short (see startCutShort). */
async function throwIfCutShort(client: CriClient, containerId: string): Promise<ContainerState> {
  const res = await client.containerStatus(containerId, false);
  if (!res.status) throw new AgentError('NotFound', `container "${containerId}" not found`);
  const state = toContainerState(res.status.state);
  if (state === 'exited' && startCutShort(res.status.reason, res.status.message)) {
    throw new AgentError('Aborted', `StartContainer container "${containerId}": a start was cut short before the container ran (${res.status.message}); it has to be created again`);
  }
  return state;
}
