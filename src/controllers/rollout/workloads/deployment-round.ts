// The Deployment part of a rollout's round (reconcile.ts calls it): what to read before the plan, and what to
// write after it: once every pod runs the target template and is available, the ReplicaSet's template is replaced
// by the Deployment's (pod-template-hash kept) and the hold released; a change beyond images and annotations
// releases the hold at once (the stock rolling update takes it). A held StatefulSet or DaemonSet is released the same
// way once done (releaseHeld): its partition, or its rolling update, back as recorded. Every release is the rollout
// requester's to ask for: patch on the workload, as for every round that acts (rollout-access.ts).
import type { V1PodTemplateSpec } from '../../../k8s/client.js';
import { requireAccess } from '../../../k8s/access-review.js';
import { rolloutNeeds } from '../../../k8s/request-permissions.js';
import { recordedRequester } from '../../../k8s/requester.js';
import type { Logger } from '../../../log.js';
import { podViews } from '../observe.js';
import { PROGRESSING, REASON, type Plan, type PlanInput, type WorkloadView } from '../plan-types.js';
import type { RolloutApi, Workload } from '../rollout-api.js';
import { ownedBy } from '../ownership.js';
import { restartViews } from '../observe.js';
import type { InPlaceRollout } from '../types.js';
import type { DeploymentApi } from './deployment-api.js';
import { DEPLOYMENT_REASON, deploymentObserved, POD_TEMPLATE_HASH_LABEL, withoutHash, type DeploymentObserved } from './deployment-view.js';
import { sameJson } from '../../../same-json.js';
import type { PodTemplate } from '../template-diff.js';

/** Reads what the planner needs of a Deployment rollout; `observed` is undefined when the Deployment is not found. */
export async function observeDeployment(api: RolloutApi, deployments: DeploymentApi, rollout: InPlaceRollout, nowMs: number): Promise<{ input: PlanInput; observed?: DeploymentObserved }> {
  const ns = rollout.metadata.namespace ?? 'default';
  const d = await deployments.getDeployment(ns, rollout.spec.targetRef.name);
  if (!d) return { input: { rollout, revisions: [], pods: [], restarts: [], nowMs } };
  const sel = d.spec?.selector?.matchLabels ?? {};
  const uid = rollout.metadata.uid ?? '';
  const [rss, pods, crs] = await Promise.all([deployments.listReplicaSets(ns, sel), api.listPods(ns, sel), api.listRestarts(ns, uid)]);
  // The pods of each ReplicaSet the Deployment owns (observe.ts reads a pod's fields; its owner is the ReplicaSet).
  const base = (ps: Parameters<typeof podViews>[1], owners: Set<string>) => [...owners].flatMap((o) => podViews({ kind: 'DaemonSet', obj: { metadata: { uid: o } } } as Workload, ps));
  const last = rollout.status?.conditions?.find((c) => c.type === PROGRESSING)?.reason;
  const handedOver = last === DEPLOYMENT_REASON.handedOver || last === DEPLOYMENT_REASON.stockRollingUpdate;
  const observed = deploymentObserved(d, rss, pods, base, handedOver);
  return { observed, input: { rollout, workload: observed.workload, revisions: observed.revisions, pods: observed.pods, restarts: restartViews(crs.filter((cr) => ownedBy(uid, cr))), nowMs } };
}

/**
 * Whether the plan says Succeeded of the workload as it is now: a plan that waits for the controller (a new
 * generation not observed yet, a revision not listed) carries the last status over, Succeeded of the last template.
 */
export function succeededNow(w: WorkloadView, plan: Plan, target?: string): boolean {
  if (plan.status.phase !== 'Succeeded' || w.observedGeneration < w.generation) return false;
  if (w.kind === 'DaemonSet') return target !== undefined && plan.status.updateRevision === target;
  return w.kind !== 'StatefulSet' || plan.status.updateRevision === w.updateRevision;
}

/**
 * A held StatefulSet or DaemonSet whose pods are all at the target revision (`target`, its hash) and available:
 * its partition, or its rolling update, back as the user had it.
 */
export async function releaseHeld(api: RolloutApi, deployments: DeploymentApi, rollout: InPlaceRollout, w: WorkloadView, plan: Plan, log: Logger, target?: string): Promise<string | undefined> {
  const held = w.kind === 'StatefulSet' ? w.heldPartition !== undefined : w.kind === 'DaemonSet' && w.heldStrategy !== undefined;
  if (!held || !succeededNow(w, plan, target)) return undefined;
  const ns = rollout.metadata.namespace ?? 'default';
  await requireAccess(api, recordedRequester(rollout.spec), rolloutNeeds(ns, rollout.spec.targetRef) ?? [], `InPlaceRollout ${ns}/${rollout.metadata.name}`);
  if (w.kind === 'DaemonSet') await deployments.releaseDaemonSet(ns, w.name, w.heldStrategy ?? '');
  else await deployments.releaseStatefulSet(ns, w.name, w.heldPartition ?? 0);
  log.info(`rollout: ${w.kind} released`, { rollout: `${ns}/${rollout.metadata.name}`, workload: w.name, ...(w.kind === 'DaemonSet' ? { updateStrategy: w.heldStrategy } : { partition: w.heldPartition }) });
  return `; ${w.kind} ${w.name} released (${w.kind === 'DaemonSet' ? `RollingUpdate ${w.heldStrategy ?? ''}` : `partition ${w.heldPartition}`})`;
}

/** What a round writes for a Deployment after its plan's actions; answers what it did, for the status message. */
export async function finishDeployment(api: RolloutApi, deployments: DeploymentApi, rollout: InPlaceRollout, o: DeploymentObserved, plan: Plan, log: Logger): Promise<string | undefined> {
  if (!o.held) return undefined;
  const finished = succeededNow(o.workload, plan);
  const rollBack = !finished && !o.handOver && failedAtFirst(rollout, plan);
  if (!finished && !o.handOver && !rollBack) return undefined;
  const ns = rollout.metadata.namespace ?? 'default';
  const name = o.workload.name;
  await requireAccess(api, recordedRequester(rollout.spec), rolloutNeeds(ns, rollout.spec.targetRef) ?? [], `InPlaceRollout ${ns}/${rollout.metadata.name}`);
  const key = `${ns}/${rollout.metadata.name}`;
  if (rollBack && o.rs) {
    // The template its pods run (its ReplicaSet's), set back while still paused, then the hold released: the
    // controller finds that ReplicaSet its new one again, and nothing is created.
    await deployments.restoreTemplate(ns, name, withoutHash(JSON.parse(JSON.stringify(o.rs.spec?.template ?? {})) as PodTemplate), plan.status.message ?? 'the first pod failed');
    await deployments.releaseDeployment(ns, name);
    log.info('rollout: Deployment template set back after its first pod failed, and released', { rollout: key, deployment: name, replicaset: o.rs.metadata?.name ?? '' });
    return `; Deployment ${name}'s template set back to ReplicaSet ${o.rs.metadata?.name ?? ''}'s (what its pods run) and released`;
  }
  // Once only: a round after the ReplicaSet took the template (its release failed, say) finds them equal.
  if (finished && o.rs && !sameJson(withoutHash(JSON.parse(JSON.stringify(o.rs.spec?.template ?? {})) as PodTemplate), o.workload.template)) {
    // The template it leaves, kept for kubectl rollout undo (history.ts).
    await deployments.keepPrevious(ns, { name, uid: o.workload.uid, selector: o.selector }, o.rs, o.history);
    const hash = o.rs.metadata?.labels?.[POD_TEMPLATE_HASH_LABEL];
    const t = JSON.parse(JSON.stringify(o.workload.template ?? {})) as V1PodTemplateSpec;
    t.metadata = { ...(t.metadata ?? {}), labels: { ...(t.metadata?.labels ?? {}), ...(hash ? { [POD_TEMPLATE_HASH_LABEL]: hash } : {}) } };
    await deployments.patchReplicaSetTemplate(ns, o.rs, t);
    log.info('rollout: ReplicaSet template set to the Deployment\'s', { rollout: key, replicaset: o.rs.metadata?.name ?? '' });
  }
  await deployments.releaseDeployment(ns, name);
  log.info(o.handOver ? 'rollout: Deployment handed over to its controller' : 'rollout: Deployment released', { rollout: key, deployment: name, ...(o.handOver ? { why: o.handOver } : {}) });
  return o.handOver ? undefined : `; Deployment ${name} released (ReplicaSet ${o.rs?.metadata?.name ?? ''} carries the new template)`;
}

/**
 * A held Deployment's update failed at its first pod and was rolled back there (failurePolicy Rollback): no pod runs
 * the new template and none is in flight, so setting the template back to the ReplicaSet's leaves every pod as it is.
 */
export function failedAtFirst(rollout: InPlaceRollout, plan: Plan): boolean {
  const st = plan.status;
  const reason = st.conditions?.find((c) => c.type === PROGRESSING)?.reason;
  return st.phase === 'Failed' && reason === REASON.podFailed && (rollout.spec.strategy?.failurePolicy ?? 'Rollback') === 'Rollback' && (st.updatedReplicas ?? 0) === 0 && (st.podsInFlight ?? []).length === 0;
}
