// The agent's checks of who asked for a ContainerRestart, made when it picks the object up and before it claims
// it: the recorded requester must hold the permissions the request needs (the admission policy's rule, checked
// again for clusters without it), and no request may target the agent's own pod.
import { AgentError } from '../../errors.js';
import { REASON_FORBIDDEN, requireAccess, type AccessReviewer } from '../access-review.js';
import { containerRestartNeeds } from '../request-permissions.js';
import { recordedRequester } from '../requester.js';
import { keyOf, type ContainerRestart } from './types.js';

/** The pod the agent itself runs in, when it runs in one. */
export interface SelfPod {
  namespace: string;
  name: string;
}

/** Throws AgentError PermissionDenied (reason Forbidden) when the request may not run; resolves when it may. */
export async function checkRequester(cr: ContainerRestart, reviewer: AccessReviewer | undefined, self: SelfPod | undefined): Promise<void> {
  const ns = cr.metadata.namespace ?? 'default';
  if (self && self.namespace === ns && self.name === cr.spec.podName) {
    throw new AgentError('PermissionDenied', `ContainerRestart ${keyOf(cr)} targets the agent's own pod ${ns}/${cr.spec.podName}: the agent would stop itself halfway; restart it with kubectl rollout restart instead; nothing was touched`, {
      reason: REASON_FORBIDDEN,
    });
  }
  if (!reviewer) return;
  await requireAccess(reviewer, recordedRequester(cr.spec), containerRestartNeeds(cr), `ContainerRestart ${keyOf(cr)}`);
}
