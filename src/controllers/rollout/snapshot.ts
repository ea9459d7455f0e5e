// The one read of a rollout's round: the rollout, its workload (or Deployment and ReplicaSets), revisions, pods,
// its own ContainerRestarts and pre-warm, as the planner's input. reconcile.ts plans and acts on it; inplacectl's
// rollout history reads it too.
import { AgentError } from '../../errors.js';
import { podViews, prewarmFromRecords, prewarmView, restartViews, revisionViews, selectorOf, workloadView } from './observe.js';
import { ownedBy } from './ownership.js';
import { prewarmName, targetRevision, type PlanInput } from './plan.js';
import type { PodView, PrewarmView } from './plan-types.js';
import type { RolloutApi, Workload } from './rollout-api.js';
import { targetHolder } from './target-claim.js';
import type { InPlaceRollout } from './types.js';
import type { DeploymentApi } from './workloads/deployment-api.js';
import { observeDeployment } from './workloads/deployment-round.js';
import type { DeploymentObserved } from './workloads/deployment-view.js';

/** Reads everything the planner looks at for the rollout; `all` is every rollout, to see which one holds the workload. */
export async function observe(api: RolloutApi, rollout: InPlaceRollout, all: InPlaceRollout[], nowMs: number, deployments?: DeploymentApi): Promise<{ input: PlanInput; workload?: Workload; deployment?: DeploymentObserved; selector?: Record<string, string> }> {
  const ns = rollout.metadata.namespace ?? 'default';
  const ref = rollout.spec.targetRef;
  const holder = targetHolder(rollout, all);
  // Held by another rollout: nothing of the workload is read, nothing will be done.
  if (holder !== rollout) return { input: { rollout, revisions: [], pods: [], restarts: [], heldBy: holder.metadata.name, nowMs } };
  if (ref.kind === 'Deployment') {
    if (!deployments) throw new AgentError('FailedPrecondition', 'this agent reads no Deployments');
    const { input, observed } = await observeDeployment(api, deployments, rollout, nowMs);
    if (!observed) return { input };
    const prewarm = await observePrewarm(api, rollout, targetRevision(observed.workload, observed.revisions)?.hash, observed.pods);
    return { input: { ...input, prewarm }, deployment: observed, selector: observed.selector };
  }
  const w = await api.getWorkload(ns, ref.kind, ref.name);
  if (!w) return { input: { rollout, revisions: [], pods: [], restarts: [], nowMs } };
  const sel = selectorOf(w);
  const [revs, pods, crs] = await Promise.all([api.listRevisions(ns, sel), api.listPods(ns, sel), api.listRestarts(ns, rollout.metadata.uid ?? '')]);
  const workload = workloadView(w);
  const revisions = revisionViews(w, revs);
  const uid = rollout.metadata.uid ?? '';
  const podList = podViews(w, pods);
  const prewarm = await observePrewarm(api, rollout, targetRevision(workload, revisions)?.hash, podList);
  return {
    workload: w,
    selector: sel,
    input: { rollout, workload, revisions, pods: podList, restarts: restartViews(crs.filter((cr) => ownedBy(uid, cr))), prewarm, nowMs },
  };
}

/** The rollout's own pre-warm of the target revision, as the planner sees it (undefined when it has none). */
async function observePrewarm(api: RolloutApi, rollout: InPlaceRollout, target: string | undefined, podList: PodView[]): Promise<PrewarmView | undefined> {
  if (!target) return undefined;
  const uid = rollout.metadata.uid ?? '';
  const pwName = prewarmName(uid, target);
  // The label narrowed the list; only what the rollout owns is its own.
  const pw = (await api.listPrewarms(uid)).find((p) => p.metadata.name === pwName && ownedBy(uid, p));
  let prewarm = pw ? prewarmView(pw) : undefined;
  if (pw && prewarm && !prewarm.done && prewarm.failedNodes.length === 0) {
    // Under way: the nodes' records say it is done before the next summary does (they may not be listed without
    // deploy/optional/fleet-prewarm-rbac.yaml; then the summary alone, which needs it too).
    const records = await api.listNodePrewarms().catch(() => undefined);
    if (records) prewarm = prewarmFromRecords(pw, podList.filter((p) => p.nodeName && !p.deleting).map((p) => p.nodeName as string), records);
  }
  return prewarm;
}
