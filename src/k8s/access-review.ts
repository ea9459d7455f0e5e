// The agent's own check of a request's creator, for clusters where the admission policy is missing: a
// SubjectAccessReview per needed permission, for the user recorded in the object (name, uid, groups, extra as
// recorded). A request whose creator lacks a permission is refused with reason Forbidden, naming it, before
// anything is touched. Needs `create subjectaccessreviews` (deploy/rbac.yaml).
import { AuthorizationV1Api, type KubeConfig } from './client.js';
import { AgentError } from '../errors.js';
import { apiStatusCode, kubeError, type KubeCaller } from './api-error.js';
import { permissionText, type Need, type Permission } from './request-permissions.js';
import type { Requester } from './requester.js';

/** The status reason of a request refused because its creator may not do what it asks. */
export const REASON_FORBIDDEN = 'Forbidden';

/** The authorizer's answer about one permission. */
export interface AccessAnswer {
  allowed: boolean;
  /** The authorizer's reason, when it gave one. */
  reason?: string;
}

/** Asks the cluster's authorizer whether a user holds a permission. Throws AgentError. */
export interface AccessReviewer {
  review(requester: Requester, p: Permission): Promise<AccessAnswer>;
}

/** AccessReviewer over SubjectAccessReviews. */
export class SubjectAccessReviewer implements AccessReviewer {
  private readonly authz: AuthorizationV1Api;

  /** caller says whose credentials kc holds (see kubeError). */
  constructor(
    kc: KubeConfig,
    private readonly caller: KubeCaller = 'agent',
  ) {
    this.authz = kc.makeApiClient(AuthorizationV1Api);
  }

  async review(r: Requester, p: Permission): Promise<AccessAnswer> {
    try {
      const res = await this.authz.createSubjectAccessReview({
        body: {
          spec: {
            user: r.username,
            uid: r.uid,
            groups: r.groups,
            extra: r.extra,
            resourceAttributes: { verb: p.verb, group: p.group, resource: p.resource, namespace: p.namespace, name: p.name },
          },
        },
      });
      return { allowed: res.status?.allowed === true && res.status.denied !== true, reason: res.status?.reason || undefined };
    } catch (err) {
      if (apiStatusCode(err) === 403) {
        throw new AgentError('PermissionDenied', "the agent cannot check the requester's rights: it may not create SubjectAccessReviews (deploy/rbac.yaml grants it); nothing was touched", {
          cause: err,
          reason: REASON_FORBIDDEN,
        });
      }
      throw kubeError(err, `check whether ${r.username} may ${permissionText(p)} (SubjectAccessReview)`, this.caller);
    }
  }
}

/**
 * Resolves when the requester holds every need (one permission of each); otherwise throws AgentError
 * PermissionDenied with reason Forbidden naming the first missing permission. `what` names the request.
 */
export async function requireAccess(reviewer: AccessReviewer, requester: Requester | undefined, needs: Need[], what: string): Promise<void> {
  if (needs.length === 0) return;
  if (!requester) {
    throw new AgentError(
      'PermissionDenied',
      `${what} records no requester (spec.requester), so the agent cannot check that its creator may do what it asks; install deploy/admission-requester.yaml, or create it with inplacectl; nothing was touched`,
      { reason: REASON_FORBIDDEN },
    );
  }
  for (const need of needs) {
    let ok = false;
    for (const p of need.anyOf) {
      ok = (await reviewer.review(requester, p)).allowed;
      if (ok) break;
    }
    if (!ok) {
      const perms = need.anyOf.map(permissionText).join(' or ');
      throw new AgentError('PermissionDenied', `${what}: its creator ${requester.username} may not ${perms}, which it needs ${need.why}; nothing was touched`, { reason: REASON_FORBIDDEN });
    }
  }
}
