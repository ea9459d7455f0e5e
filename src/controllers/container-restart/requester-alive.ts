// Whether the user recorded as a request's creator still exists, checked when an agent takes the request: the
// recorded requester was frozen at admission, and an access review of it passes long after its account is gone
// (RBAC bindings keep naming a deleted ServiceAccount, and its groups still match). A ServiceAccount is the one
// identity the API server itself keeps: it is read and its uid compared with the one recorded at admission
// (a ServiceAccount token's user uid is the ServiceAccount's metadata.uid). Other users (certificates, OIDC,
// static tokens) have no object to read; their rights alone are checked (access-review.ts).
import { CoreV1Api, type KubeConfig } from '../../k8s/client.js';
import { AgentError } from '../../errors.js';
import { RefusalReasons } from '../../engine/reasons.js';
import { apiStatusCode, kubeError } from '../../k8s/api-error.js';
import { REASON_FORBIDDEN } from '../../k8s/access-review.js';
import type { Requester } from '../../k8s/requester.js';

const SA_PREFIX = 'system:serviceaccount:';

/** Reads a ServiceAccount's uid; undefined when there is no such ServiceAccount. Throws AgentError. */
export interface ServiceAccountReader {
  uidOf(namespace: string, name: string): Promise<string | undefined>;
}

/** The namespace and name of a ServiceAccount user (`system:serviceaccount:NS:NAME`), or undefined for another user. */
export function serviceAccountOf(username: string): { namespace: string; name: string } | undefined {
  if (!username.startsWith(SA_PREFIX)) return undefined;
  const [namespace, name, ...rest] = username.slice(SA_PREFIX.length).split(':');
  return namespace && name && rest.length === 0 ? { namespace, name } : undefined;
}

/** ServiceAccountReader over the API server; needs `get serviceaccounts` (deploy/rbac.yaml). */
export class KubeServiceAccounts implements ServiceAccountReader {
  private readonly core: CoreV1Api;

  constructor(kc: KubeConfig) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  async uidOf(namespace: string, name: string): Promise<string | undefined> {
    try {
      return (await this.core.readNamespacedServiceAccount({ namespace, name })).metadata?.uid ?? '';
    } catch (err) {
      const code = apiStatusCode(err);
      if (code === 404) return undefined;
      if (code === 403) {
        throw new AgentError('PermissionDenied', "the agent cannot check that the requester's ServiceAccount still exists: it may not get serviceaccounts (deploy/rbac.yaml grants it); nothing was touched", {
          cause: err,
          reason: REASON_FORBIDDEN,
        });
      }
      throw kubeError(err, `read ServiceAccount ${namespace}/${name}`);
    }
  }
}

/**
 * Resolves when the requester may still act: not a ServiceAccount, or a ServiceAccount that exists with the uid
 * recorded (any uid when none was recorded). Otherwise throws AgentError PermissionDenied, reason RequesterGone.
 * `what` names the request.
 */
export async function requireRequesterAlive(accounts: ServiceAccountReader, requester: Requester | undefined, what: string): Promise<void> {
  const sa = requester && serviceAccountOf(requester.username);
  if (!sa) return;
  const uid = await accounts.uidOf(sa.namespace, sa.name);
  const gone = (detail: string) =>
    new AgentError('PermissionDenied', `${what}: its creator ${requester.username} ${detail}, so the request is not run for it; nothing was touched`, { reason: RefusalReasons.RequesterGone });
  if (uid === undefined) throw gone('no longer exists (its ServiceAccount was deleted)');
  if (requester.uid && uid !== requester.uid) throw gone(`is not the ServiceAccount that made the request (recorded uid ${requester.uid}, now ${uid}: deleted and made again)`);
}
