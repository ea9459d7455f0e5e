// Who asked for a request object. The API server does not record an object's creator, so the request objects
// carry it in spec.requester: written at admission from request.userInfo by deploy/admission-requester.yaml (a
// MutatingAdmissionPolicy) and checked against it by deploy/admission-policy.yaml; inplacectl fills it itself for
// clusters without those policies. The agent acts for this user, never with its own rights alone.
import { AuthenticationV1Api, type KubeConfig } from './client.js';
import { kubeError, type KubeCaller } from './api-error.js';

/** The user a request object was created by, as the API server authenticated them. */
export interface Requester {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** The recorded requester of a spec, or undefined when there is none (or it is not a requester's shape). */
export function recordedRequester(spec: { requester?: unknown } | undefined): Requester | undefined {
  const r = spec?.requester as Partial<Requester> | undefined;
  if (!r || typeof r !== 'object' || typeof r.username !== 'string' || r.username === '') return undefined;
  const groups = Array.isArray(r.groups) ? r.groups.filter((g): g is string => typeof g === 'string') : undefined;
  const extra: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(r.extra && typeof r.extra === 'object' ? r.extra : {})) {
    if (Array.isArray(v)) extra[k] = v.filter((x): x is string => typeof x === 'string');
  }
  return {
    username: r.username,
    ...(typeof r.uid === 'string' && r.uid ? { uid: r.uid } : {}),
    ...(groups?.length ? { groups } : {}),
    ...(Object.keys(extra).length ? { extra } : {}),
  };
}

/** The user this kubeconfig authenticates as (a SelfSubjectReview, which every authenticated user may make). */
export async function selfRequester(kc: KubeConfig, caller: KubeCaller = 'agent'): Promise<Requester> {
  try {
    const r = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    const u = r.status?.userInfo;
    if (!u?.username) throw new Error('the SelfSubjectReview named no user');
    return {
      username: u.username,
      ...(u.uid ? { uid: u.uid } : {}),
      ...(u.groups?.length ? { groups: u.groups } : {}),
      ...(u.extra && Object.keys(u.extra).length ? { extra: u.extra } : {}),
    };
  } catch (err) {
    throw kubeError(err, 'find out who this kubeconfig is (SelfSubjectReview)', caller);
  }
}
