// The agent's checks of who asked for a ContainerRestart and of the pod it names, made when it picks the object
// up and before it claims it: no request may target the agent's own pod; a static pod needs the request's opt-in
// (spec.allowStaticPod, itself a right only a cluster admin holds); the recorded requester must still exist (a
// ServiceAccount by uid, requester-alive.ts) and hold the permissions the request needs (the admission policy's
// rule, checked again for clusters without it); and admission must let the requester make the image patch the
// agent will make (a dry run as that user, admission-as-requester.ts).
import { AgentError } from '../../errors.js';
import { RefusalReasons } from '../../engine/reasons.js';
import { REASON_FORBIDDEN, requireAccess, type AccessReviewer } from '../../k8s/access-review.js';
import { containerRestartNeeds, RESTART_STATIC_VERB } from '../../k8s/request-permissions.js';
import { recordedRequester } from '../../k8s/requester.js';
import { requireRequesterAlive, type ServiceAccountReader } from './requester-alive.js';
import type { AdmissionProbe } from './admission-as-requester.js';
import type { V1Pod } from '../../k8s/client.js';
import { keyOf, type ContainerRestart } from './types.js';

/** The annotation the kubelet puts on a static pod's mirror in the API server. */
export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

/** The pod the agent itself runs in, when it runs in one. */
export interface SelfPod {
  namespace: string;
  name: string;
}

/** What else the check reads: the pod as the API server has it, the requester's ServiceAccount, admission. */
export interface RequesterContext {
  /** The named pod as the API server has it (absent: not known there). */
  pod?: Pick<V1Pod, 'metadata' | 'spec'>;
  /** Where a ServiceAccount requester is looked up (absent: not checked). */
  accounts?: ServiceAccountReader;
  /** Where the request's image patch is tried as a dry run as the requester (absent: not tried). */
  admission?: AdmissionProbe;
  /** Called when the cluster does not let the agent impersonate, so the dry run could not be made. */
  admissionUnavailable?: () => void;
}

/**
 * Throws AgentError PermissionDenied when the request may not run (reason Forbidden, StaticPodRefused,
 * RequesterGone or AdmissionRefused); resolves when it may.
 */
export async function checkRequester(cr: ContainerRestart, reviewer: AccessReviewer | undefined, self: SelfPod | undefined, ctx: RequesterContext = {}): Promise<void> {
  const ns = cr.metadata.namespace ?? 'default';
  const what = `ContainerRestart ${keyOf(cr)}`;
  if (self && self.namespace === ns && self.name === cr.spec.podName) {
    throw new AgentError('PermissionDenied', `${what} targets the agent's own pod ${ns}/${cr.spec.podName}: the agent would stop itself halfway; restart it with kubectl rollout restart instead; nothing was touched`, {
      reason: REASON_FORBIDDEN,
    });
  }
  if (ctx.pod?.metadata?.annotations?.[MIRROR_POD_ANNOTATION] !== undefined && cr.spec.allowStaticPod !== true) {
    throw new AgentError(
      'PermissionDenied',
      `${what}: pod ${ns}/${cr.spec.podName} is a static pod (its spec is a file on the node; annotation ${MIRROR_POD_ANNOTATION}): restarting its containers does what deleting its mirror pod never does; a cluster admin may allow it with spec.allowStaticPod (which needs ${RESTART_STATIC_VERB} on containerrestarts.inplace-agent.io); nothing was touched`,
      { reason: RefusalReasons.StaticPod },
    );
  }
  const requester = recordedRequester(cr.spec);
  if (ctx.accounts) await requireRequesterAlive(ctx.accounts, requester, what);
  if (reviewer) await requireAccess(reviewer, requester, containerRestartNeeds(cr), what);
  const patch = ctx.pod && imagePatch(cr, ctx.pod);
  if (ctx.admission && requester && patch) {
    if ((await ctx.admission.patchPodAs(requester, ns, cr.spec.podName, patch)) === 'unavailable') ctx.admissionUnavailable?.();
  }
}

/**
 * The pod patch the agent's image changes add up to (each container in the spec list that holds it), or
 * undefined when the request changes no image the pod's spec has.
 */
export function imagePatch(cr: ContainerRestart, pod: Pick<V1Pod, 'spec'>): { spec: Record<string, { name: string; image: string }[]> } | undefined {
  const spec: Record<string, { name: string; image: string }[]> = {};
  for (const c of cr.spec.containers) {
    if (c.image === undefined) continue;
    const list = pod.spec?.containers.some((x) => x.name === c.name) ? 'containers' : pod.spec?.initContainers?.some((x) => x.name === c.name) ? 'initContainers' : undefined;
    if (list) (spec[list] ??= []).push({ name: c.name, image: c.image });
  }
  return Object.keys(spec).length ? { spec } : undefined;
}
