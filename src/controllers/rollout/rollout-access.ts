// A rollout grants nothing beyond its requester's own rights. The coordinator acts with the agent's rights (it
// relabels and deletes pods, and creates ContainerRestarts and an ImagePrewarm), so before each round that would
// do anything it asks SubjectAccessReviews whether the user recorded in spec.requester (written at admission by
// deploy/admission-requester.yaml) may do that much themselves:
//
//   any action                     patch on the target workload (the admission rule, checked again)
//   restart (a ContainerRestart)   patch pods/NAME (it changes the pod's images)
//   relabel                        patch pods/NAME
//   recreate (fallback Recreate)   delete pods/NAME
//   prewarm (an ImagePrewarm)      create imageprewarms (cluster-wide), and list pods in the namespace
//
// The writes on the workload itself after the plan's actions (a Deployment's ReplicaSet template, its template set
// back, the release of a hold: workloads/deployment-round.ts) need patch on the workload too (guardedWrite).
//
// A requester that lacks one, or no requester at all, makes the round do nothing and the rollout Failed with
// reason Forbidden, naming the user and the permission. Every round checks again: once the right is granted (or
// someone with it writes the spec, and so becomes the requester), the rollout goes on. What the rollout creates
// carries the same requester, so each node's agent checks it again as for any other request.
import { AgentError } from '../../errors.js';
import { REASON_FORBIDDEN, requireAccess, type AccessReviewer } from '../../k8s/access-review.js';
import { containerRestartNeeds, imagePrewarmNeeds, permissionText, rolloutNeeds, type Need } from '../../k8s/request-permissions.js';
import { recordedRequester } from '../../k8s/requester.js';
import { FLEET_GROUP, IMAGE_PREWARM_PLURAL } from '../image-prewarm/types.js';
import { COMPLETE, PROGRESSING, condition, type Plan, type RolloutAction } from './plan.js';
import type { InPlaceRollout } from './types.js';

/** The permissions the rollout's requester must hold for the actions of one round; none when there are none. */
export function roundNeeds(rollout: InPlaceRollout, actions: RolloutAction[]): Need[] {
  if (actions.length === 0) return [];
  const namespace = rollout.metadata.namespace ?? 'default';
  const pod = (name: string) => ({ group: '', resource: 'pods', namespace, name });
  const needs: Need[] = [...(rolloutNeeds(namespace, rollout.spec.targetRef) ?? [])];
  for (const a of actions) {
    switch (a.kind) {
      case 'restart':
        needs.push(...containerRestartNeeds({ metadata: { namespace }, spec: { podName: a.pod, containers: a.containers } }).map((n) => ({ ...n, why: `${n.why} of pod ${a.pod}` })));
        break;
      case 'relabel':
        needs.push({ anyOf: [{ ...pod(a.pod), verb: 'patch' }], why: "to set the pod's labels to its new revision" });
        break;
      case 'recreate':
        needs.push({ anyOf: [{ ...pod(a.pod), verb: 'delete' }], why: 'to have the controller recreate the pod from the new template (fallback Recreate)' });
        break;
      case 'prewarm':
        needs.push({ anyOf: [{ verb: 'create', group: FLEET_GROUP, resource: IMAGE_PREWARM_PLURAL }], why: 'to pre-warm the new images (prewarm: true)' });
        needs.push(...imagePrewarmNeeds({ spec: { podSelector: { namespace } } }));
        break;
    }
  }
  // Each permission once, in the order first needed.
  const seen = new Set<string>();
  return needs.filter((n) => {
    const key = n.anyOf.map(permissionText).join(' or ');
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The plan of a round refused for its requester's rights: nothing to do, phase Failed, reason Forbidden. */
export function forbiddenPlan(plan: Plan, rollout: InPlaceRollout, message: string, nowMs: number): Plan {
  const prev = rollout.status;
  const now = new Date(nowMs).toISOString();
  return {
    actions: [],
    prewarm: plan.prewarm,
    status: {
      ...plan.status,
      phase: 'Failed',
      message,
      conditions: [
        condition(prev, { type: PROGRESSING, status: 'False', reason: REASON_FORBIDDEN, message }, now),
        condition(prev, { type: COMPLETE, status: 'False', reason: REASON_FORBIDDEN, message }, now),
      ],
    },
  };
}

/**
 * The plan to carry out: plan itself when the rollout's requester may do all of its actions, else forbiddenPlan
 * with the reason. Errors other than a refusal (the API server away) are thrown: the round is tried again.
 */
export async function guardPlan(reviewer: AccessReviewer, rollout: InPlaceRollout, plan: Plan, nowMs: number): Promise<Plan> {
  const needs = roundNeeds(rollout, plan.actions);
  if (needs.length === 0) return plan;
  const what = `InPlaceRollout ${rollout.metadata.namespace ?? 'default'}/${rollout.metadata.name}`;
  const requester = recordedRequester(rollout.spec);
  if (!requester) {
    const message = `${what} records no requester (spec.requester), so the agent cannot check that whoever asked for it may do what it does; install deploy/admission-requester.yaml, or write your own user there (kubectl auth whoami); nothing was touched`;
    return forbiddenPlan(plan, rollout, message, nowMs);
  }
  try {
    await requireAccess(reviewer, requester, needs, what);
    return plan;
  } catch (err) {
    if (!AgentError.is(err, 'PermissionDenied')) throw err;
    return forbiddenPlan(plan, rollout, err.message, nowMs);
  }
}

/**
 * Runs one of the round's writes on the workload (write answers a note for the status message): a refusal of the
 * rollout's requester (PermissionDenied) makes the plan forbiddenPlan, with nothing written; other errors are thrown.
 */
export async function guardedWrite(rollout: InPlaceRollout, plan: Plan, nowMs: number, write: () => Promise<string | undefined>): Promise<Plan> {
  try {
    const note = await write();
    return note ? { ...plan, status: { ...plan.status, message: `${plan.status.message ?? ''}${note}` } } : plan;
  } catch (err) {
    if (!AgentError.is(err, 'PermissionDenied')) throw err;
    return forbiddenPlan(plan, rollout, err.message, nowMs);
  }
}
