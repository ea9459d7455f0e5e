// The Deployment part of a rollout's round (reconcile.ts calls it): what to read before the plan, what to write
// before its first pod update (the ReplicaSet's template marked with the target, deployment-view.ts), and what to
// write after it: once every pod runs the target template and is available, the ReplicaSet's template is replaced
// by the Deployment's (pod-template-hash kept) and the hold released; a change beyond images and annotations
// releases the hold at once (the stock rolling update takes it). A held StatefulSet or DaemonSet is released the same
// way once done (releaseHeld): its partition, or its rolling update, back as recorded. Every release is the rollout
// requester's to ask for: patch on the workload, as for every round that acts (rollout-access.ts).
import type { V1PodTemplateSpec, V1ReplicaSet } from '../../../k8s/client.js';
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
import { DEPLOYMENT_REASON, deploymentObserved, markedTemplate, POD_TEMPLATE_HASH_LABEL, templateHash, withoutHash, type DeploymentObserved } from './deployment-view.js';
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
  // Switched to OnDelete by its user while held: nothing to put back but the annotation.
  else await deployments.releaseStatefulSet(ns, w.name, w.heldPartition ?? 0, w.updateStrategy === 'OnDelete');
  log.info(`rollout: ${w.kind} released`, { rollout: `${ns}/${rollout.metadata.name}`, workload: w.name, ...(w.kind === 'DaemonSet' ? { updateStrategy: w.heldStrategy } : { partition: w.heldPartition }) });
  return `; ${w.kind} ${w.name} released (${w.kind === 'DaemonSet' ? `RollingUpdate ${w.heldStrategy ?? ''}` : `partition ${w.heldPartition}`})`;
}

/** t with the ReplicaSet's pod-template-hash label (kept on every template written to it). */
function withHashOf(rs: V1ReplicaSet, t: PodTemplate | undefined): V1PodTemplateSpec {
  const c = JSON.parse(JSON.stringify(t ?? {})) as V1PodTemplateSpec;
  const hash = rs.metadata?.labels?.[POD_TEMPLATE_HASH_LABEL];
  c.metadata = { ...(c.metadata ?? {}), labels: { ...(c.metadata?.labels ?? {}), ...(hash ? { [POD_TEMPLATE_HASH_LABEL]: hash } : {}) } };
  return c;
}

/**
 * Before a held Deployment's pod updates (the plan starts one, or some are in flight): its ReplicaSet's template
 * kept in the history ReplicaSet (once, while not marked yet), then replaced by the target marked with its hash, so
 * that pods a scale adds meanwhile are born on the target (not with revisionHistoryLimit 0, which deletes the
 * history: its new pods are then updated in place like the others). A write that fails (the ReplicaSet changed meanwhile) is
 * tried again at a later round that updates pods.
 */
export async function markReplicaSet(api: RolloutApi, deployments: DeploymentApi, rollout: InPlaceRollout, o: DeploymentObserved, plan: Plan, log: Logger): Promise<string | undefined> {
  const rs = o.rs;
  const t = o.workload.template;
  const updating = plan.actions.some((a) => a.kind === 'restart') || (plan.status.phase === 'Progressing' && (plan.status.podsInFlight ?? []).length > 0);
  if (!o.held || o.handOver || o.noHistory || !rs || !t || !o.previous || !updating || sameJson(o.previous, t)) return undefined;
  const hash = templateHash(t);
  if (o.marked === hash) return undefined;
  const ns = rollout.metadata.namespace ?? 'default';
  const name = o.workload.name;
  await requireAccess(api, recordedRequester(rollout.spec), rolloutNeeds(ns, rollout.spec.targetRef) ?? [], `InPlaceRollout ${ns}/${rollout.metadata.name}`);
  try {
    // Marked already (by an earlier target): the history keeps the template its pods were made from.
    if (o.marked === undefined) await deployments.keepPrevious(ns, { name, uid: o.workload.uid, selector: o.selector }, rs, o.history);
    await deployments.patchReplicaSetTemplate(ns, rs, withHashOf(rs, markedTemplate(t, hash)));
  } catch (err) {
    // Changed meanwhile (its test fails), or refused: its new pods are then updated in place like the others.
    log.warn('rollout: ReplicaSet template not marked this round', { rollout: `${ns}/${rollout.metadata.name}`, replicaset: rs.metadata?.name ?? '', error: (err as Error).message });
    return undefined;
  }
  log.info('rollout: ReplicaSet template set to the target, marked', { rollout: `${ns}/${rollout.metadata.name}`, replicaset: rs.metadata?.name ?? '', template: hash });
  return undefined;
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
    // The template its pods run (its ReplicaSet's, or the history's while that is marked), set back while still
    // paused, the ReplicaSet's unmarked first, then the hold released: the controller finds that ReplicaSet its new
    // one again, and nothing is created.
    const previous = o.previous ?? withoutHash(JSON.parse(JSON.stringify(o.rs.spec?.template ?? {})) as PodTemplate);
    if (o.marked !== undefined) await deployments.patchReplicaSetTemplate(ns, o.rs, withHashOf(o.rs, previous));
    await deployments.restoreTemplate(ns, name, previous, plan.status.message ?? 'the first pod failed');
    await deployments.releaseDeployment(ns, name);
    log.info('rollout: Deployment template set back after its first pod failed, and released', { rollout: key, deployment: name, replicaset: o.rs.metadata?.name ?? '' });
    return `; Deployment ${name}'s template set back to ReplicaSet ${o.rs.metadata?.name ?? ''}'s (what its pods run) and released`;
  }
  // Once only: a round after the ReplicaSet took the template (its release failed, say) finds them equal.
  if (finished && o.rs && !sameJson(withoutHash(JSON.parse(JSON.stringify(o.rs.spec?.template ?? {})) as PodTemplate), o.workload.template)) {
    // The template it leaves, kept for kubectl rollout undo (history.ts); kept already when it was marked.
    if (o.marked === undefined) await deployments.keepPrevious(ns, { name, uid: o.workload.uid, selector: o.selector }, o.rs, o.history);
    await deployments.patchReplicaSetTemplate(ns, o.rs, withHashOf(o.rs, o.workload.template));
    log.info('rollout: ReplicaSet template set to the Deployment\'s', { rollout: key, replicaset: o.rs.metadata?.name ?? '' });
  }
  // Handed over while marked: the ReplicaSet's template back to what its pods were made from, for the history.
  if (o.handOver && o.rs && o.marked !== undefined && o.previous) await deployments.patchReplicaSetTemplate(ns, o.rs, withHashOf(o.rs, o.previous));
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
