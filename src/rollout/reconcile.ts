// One round of one rollout, by the coordinating agent: read the objects, ask the planner, do what it says (in
// its order, and only while this agent still coordinates), write the status it derived. Nothing is carried
// from one round to the next: a new coordinator picks up exactly where the last one was.
import { AgentError } from '../errors.js';
import type { Logger } from '../log.js';
import { CR_GROUP, CR_KIND, CR_VERSION, type ContainerRestart } from '../kube/container-restart/types.js';
import { recordedRequester } from '../kube/requester.js';
import { podViews, prewarmFromRecords, prewarmView, restartViews, revisionViews, REVISION_HASH_ANNOTATION, REVISION_NUMBER_ANNOTATION, selectorOf, workloadView } from './observe.js';
import { DEFAULT_PROGRESS_DEADLINE_SECONDS, planRollout, prewarmName, targetRevision, type Plan, type PlanInput, type RolloutAction } from './plan.js';
import type { RolloutApi, Workload } from './rollout-api.js';
import { guardPlan } from './rollout-access.js';
import { targetHolder } from './target-claim.js';
import { sameJson } from './template-diff.js';
import { IPR_GROUP, IPR_KIND, IPR_VERSION, ROLLOUT_LABEL, type InPlaceRollout } from './types.js';

/** Nodes that pull a rollout's pre-warm at once (the fleet's maxParallelNodes). */
export const PREWARM_PARALLEL_NODES = 5;
/** Attempts per image and node after the first before the pre-warm gives up on a node. */
export const PREWARM_BACKOFF_LIMIT = 2;

/** What a round needs. */
export interface ReconcileDeps {
  api: RolloutApi;
  /** This agent's node (written to the status as the coordinator). */
  node: string;
  nowMs(): number;
  /** Whether this agent still coordinates; checked before every write. */
  leading(): boolean;
  log: Logger;
}

/** Reads everything the planner looks at for the rollout; `all` is every rollout, to see which one holds the workload. */
export async function observe(api: RolloutApi, rollout: InPlaceRollout, all: InPlaceRollout[], nowMs: number): Promise<{ input: PlanInput; workload?: Workload }> {
  const ns = rollout.metadata.namespace ?? 'default';
  const ref = rollout.spec.targetRef;
  const holder = targetHolder(rollout, all);
  // Held by another rollout: nothing of the workload is read, nothing will be done.
  if (holder !== rollout) return { input: { rollout, revisions: [], pods: [], restarts: [], heldBy: holder.metadata.name, nowMs } };
  const w = await api.getWorkload(ns, ref.kind, ref.name);
  if (!w) return { input: { rollout, revisions: [], pods: [], restarts: [], nowMs } };
  const sel = selectorOf(w);
  const [revs, pods, crs, pws] = await Promise.all([api.listRevisions(ns, sel), api.listPods(ns, sel), api.listRestarts(ns, rollout.metadata.uid ?? ''), api.listPrewarms(rollout.metadata.uid ?? '')]);
  const workload = workloadView(w);
  const revisions = revisionViews(w, revs);
  const target = targetRevision(workload, revisions);
  const pwName = target ? prewarmName(rollout.metadata.uid ?? '', target.hash) : undefined;
  const pw = pws.find((p) => p.metadata.name === pwName);
  const podList = podViews(w, pods);
  let prewarm = pw ? prewarmView(pw) : undefined;
  if (pw && prewarm && !prewarm.done && prewarm.failedNodes.length === 0) {
    // Under way: the nodes' records say it is done before the next summary does (they may not be listed without
    // deploy/optional/fleet-prewarm-rbac.yaml; then the summary alone, which needs it too).
    const records = await api.listNodePrewarms().catch(() => undefined);
    if (records) prewarm = prewarmFromRecords(pw, podList.filter((p) => p.nodeName && !p.deleting).map((p) => p.nodeName as string), records);
  }
  return {
    workload: w,
    input: { rollout, workload, revisions, pods: podList, restarts: restartViews(crs), prewarm, nowMs },
  };
}

/** The ContainerRestart of one pod update, owned by the rollout, asked for by the rollout's requester. */
export function restartObject(rollout: InPlaceRollout, a: Extract<RolloutAction, { kind: 'restart' }>): ContainerRestart {
  const s = rollout.spec.strategy ?? {};
  const minReady = s.minReadySeconds ?? 0;
  const requester = recordedRequester(rollout.spec);
  return {
    apiVersion: `${CR_GROUP}/${CR_VERSION}`,
    kind: CR_KIND,
    metadata: {
      name: a.name,
      namespace: rollout.metadata.namespace,
      labels: { [ROLLOUT_LABEL]: rollout.metadata.uid ?? '' },
      annotations: { [REVISION_HASH_ANNOTATION]: a.revisionHash, [REVISION_NUMBER_ANNOTATION]: String(a.revisionNumber) },
      ownerReferences: [{ apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: IPR_KIND, name: rollout.metadata.name, uid: rollout.metadata.uid ?? '', controller: true }],
    } as ContainerRestart['metadata'],
    spec: {
      podName: a.pod,
      containers: a.containers,
      strategy: {
        ...(s.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: s.gracePeriodSeconds } : {}),
        ...(s.drainSeconds !== undefined ? { drainSeconds: s.drainSeconds } : {}),
        minReadySeconds: minReady,
        // Pause leaves the failed pod as it is, for a person; Rollback puts the old image back in place.
        failurePolicy: s.failurePolicy === 'Pause' ? 'Fail' : 'Rollback',
      },
      activeDeadlineSeconds: minReady + (rollout.spec.progressDeadlineSeconds ?? DEFAULT_PROGRESS_DEADLINE_SECONDS),
      ...(requester ? { requester } : {}),
    },
  };
}

async function act(d: ReconcileDeps, rollout: InPlaceRollout, w: Workload | undefined, a: RolloutAction): Promise<void> {
  const ns = rollout.metadata.namespace ?? 'default';
  const key = `${ns}/${rollout.metadata.name}`;
  switch (a.kind) {
    case 'restart':
      try {
        await d.api.createRestart(restartObject(rollout, a));
        d.log.info('rollout: pod update started', { rollout: key, pod: a.pod, containerrestart: a.name, images: a.containers.map((c) => `${c.name}=${c.image}`).join(',') });
      } catch (err) {
        // Exists: this update was started already (by this agent or an earlier coordinator); never a second one.
        if (!AgentError.is(err, 'Aborted')) throw err;
      }
      return;
    case 'relabel':
      await d.api.patchPodMetadata(ns, a.pod, a.podUid, a.labels, a.annotations);
      d.log.info('rollout: pod relabelled to its new revision', { rollout: key, pod: a.pod, labels: JSON.stringify(a.labels) });
      return;
    case 'recreate':
      await d.api.deletePod(ns, a.pod, a.podUid);
      d.log.info('rollout: pod deleted for the controller to recreate (fallback Recreate)', { rollout: key, pod: a.pod, reason: a.reason });
      return;
    case 'prewarm':
      try {
        const requester = recordedRequester(rollout.spec);
        await d.api.createPrewarm({
          metadata: { name: a.name, labels: { [ROLLOUT_LABEL]: rollout.metadata.uid ?? '' } } as { name: string },
          spec: {
            images: a.images,
            podSelector: { namespace: ns, matchLabels: w ? selectorOf(w) : {} },
            maxParallelNodes: PREWARM_PARALLEL_NODES,
            backoffLimit: PREWARM_BACKOFF_LIMIT,
            activeDeadlineSeconds: rollout.spec.progressDeadlineSeconds ?? DEFAULT_PROGRESS_DEADLINE_SECONDS,
            ...(requester ? { requester } : {}),
          },
        });
        d.log.info('rollout: pre-warm created', { rollout: key, prewarm: a.name, images: a.images.join(',') });
      } catch (err) {
        if (!AgentError.is(err, 'Aborted')) throw err;
      }
  }
}

/** One round: observe, plan, act, write the status. `all` is every rollout of the round. Returns the plan. */
export async function reconcileRollout(d: ReconcileDeps, rollout: InPlaceRollout, all: InPlaceRollout[] = [rollout]): Promise<Plan> {
  const { input, workload } = await observe(d.api, rollout, all, d.nowMs());
  // Nothing is done that the rollout's requester could not do (rollout-access.ts).
  const plan = await guardPlan(d.api, rollout, planRollout(input), d.nowMs());
  for (const a of plan.actions) {
    if (!d.leading()) return plan;
    await act(d, rollout, workload, a);
  }
  // Pre-warms of this rollout that no round needs any more (started, or of an older revision).
  for (const pw of await d.api.listPrewarms(rollout.metadata.uid ?? '')) {
    if (pw.metadata.name !== plan.prewarm && d.leading()) await d.api.deletePrewarm(pw.metadata.name);
  }
  const status = { ...plan.status, coordinator: d.node };
  if (d.leading() && !sameJson(rollout.status ?? {}, status)) await d.api.writeRolloutStatus(rollout, status);
  return plan;
}
