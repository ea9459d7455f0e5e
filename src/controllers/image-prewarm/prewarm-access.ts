// The fleet agents' check of who asked for an ImagePrewarm, before any Secret it names is read: its recorded
// requester must hold what the prewarm needs (request-permissions.ts), as the admission policy requires too.
import { requireAccess, type AccessReviewer } from '../../k8s/access-review.js';
import { imagePrewarmNeeds } from '../../k8s/request-permissions.js';
import { recordedRequester } from '../../k8s/requester.js';
import type { ImagePrewarm } from './types.js';

/** Resolves when the prewarm's creator holds every permission it needs; throws AgentError PermissionDenied (reason Forbidden) otherwise. */
export async function checkPrewarmRequester(reviewer: AccessReviewer, pw: ImagePrewarm): Promise<void> {
  await requireAccess(reviewer, recordedRequester(pw.spec), imagePrewarmNeeds(pw), `ImagePrewarm ${pw.metadata.name}`);
}
