// The rollout planner: a pure function of (rollout, workload, revisions, pods, ContainerRestarts, pre-warm, now).
// It remembers nothing. Every round the coordinating agent reads the objects again and asks it what to do next
// and what the status is, as the stock StatefulSet and DaemonSet controllers reconcile from what they observe.
//
//   another, older rollout names the same workload                                    -> Failed (TargetInUse), nothing done
//   the target: updateRevision (StatefulSet), the revision of spec.template (DaemonSet, revisions.ts)
//   for each pod of the target revision's scope, highest ordinal (StatefulSet) or node order (DaemonSet) first:
//     updated                      label controller-revision-hash = target            -> nothing
//     its ContainerRestart failed                                                      -> failure: stop starting
//     its ContainerRestart running                                                     -> in flight (unavailable until
//                                                                                          its new containers run, ready,
//                                                                                          and the pod is available)
//     spec already at the target (restart succeeded, or labels alone changed)          -> relabel (in flight until)
//     template differs beyond images/labels/annotations                                -> fallback (Pause | Recreate)
//     its ContainerRestart's name taken by another owner, or its create refused        -> failure (NameTaken |
//                                                                                          CreateRefused): stop starting
//     otherwise, within maxUnavailable, not paused, pre-warmed                         -> start a ContainerRestart
// Only ContainerRestarts the rollout owns are passed in (ownership.ts).
//
// planRollout checks the target (checkTarget), then reads one snapshot (snapshotOf) in three pure stages and
// writes the status from it (plan-status.ts):
//   classify (plan-classify.ts)   each pod of the scope into its class: updated, failed, in flight, to relabel, a candidate
//   budget   (plan-budget.ts)     the partition's scope and the maxUnavailable left, from the live pods
//   gates    (plan-gates.ts)      the first gate that holds decides (failure, fallback Pause, done, paused, pre-warm);
//                                 if none does, candidates start within the budget
import { chooseTarget } from './revisions.js';
import { REASON } from './plan-types.js';
import type { CreateConflict, Plan, PlanInput, RestartView, RevisionView, WorkloadView } from './plan-types.js';
import type { RolloutPhase } from './types.js';
import { classifyPods, isUpdated, wantedContainers } from './plan-classify.js';
import { budgetOf, isAvailable, scopeOf, type Scope } from './plan-budget.js';
import { gateRound } from './plan-gates.js';
import { roundStatus, stoppedStatus, type RoundView } from './plan-status.js';

export * from './plan-types.js';
export { restartName, prewarmName } from './names.js';
export { targetRevision } from './revisions.js';
export { condition } from './plan-status.js';

/** maxUnavailable as a number of pods (kit/budget.ts). */
export { resolveMaxUnavailable } from '../kit/budget.js';

/** What to do next, and the status: see the table at the top of this file. */
export function planRollout(input: PlanInput): Plan {
  const front = checkTarget(input);
  if ('plan' in front) return front.plan;
  const v = snapshotOf(input, front.workload, front.target, front.ignored);
  const { rollout, nowMs } = input;
  const { workload, target, live, minReadyMs, restartOf } = v;
  const classes = classifyPods({ rolloutName: rollout.metadata.name, workload, target, byHash: v.byHash, order: v.scope.order, inScope: v.scope.inScope, restartOf: v.restartOf, conflictOf: v.conflictOf });
  const budget = budgetOf({ workload, maxUnavailable: rollout.spec.maxUnavailable, live, inFlight: classes.inFlight, restartOf, wanted: wantedContainers(target), nowMs, minReadyMs });
  const verdict = gateRound({
    rolloutName: rollout.metadata.name,
    rolloutUid: rollout.metadata.uid ?? '',
    spec: rollout.spec,
    workload,
    target,
    classes,
    budget,
    scope: v.scope,
    partition: v.partition,
    live,
    updated: v.updated,
    available: (p) => isAvailable(p, nowMs, minReadyMs),
    minReadyMs,
    // Once any pod of this revision was given a ContainerRestart, the pre-warm is behind us.
    started: restartOf.size > 0,
    prewarm: input.prewarm,
    conflictOf: v.conflictOf,
    nowMs,
  });
  const due = budget.dueMs;
  return {
    actions: [...classes.relabels, ...verdict.actions],
    prewarm: verdict.prewarm,
    ...(due.length > 0 || verdict.wakeAtMs !== undefined ? { wakeAtMs: Math.min(...due, verdict.wakeAtMs ?? Infinity) } : {}),
    status: roundStatus(v, classes, verdict),
  };
}

/** The target and its revision, or the plan of a rollout that does nothing (yet): the first rows of the table. */
function checkTarget(input: PlanInput): { plan: Plan } | { workload: WorkloadView; target: RevisionView; ignored: RevisionView[] } {
  const { rollout, workload: w } = input;
  const { targetRef } = rollout.spec;
  const now = new Date(input.nowMs).toISOString();
  const stopped = (phase: RolloutPhase, reason: string, message: string) => ({ plan: { actions: [], status: stoppedStatus(rollout, phase, reason, message, now) } });
  if (input.heldBy) {
    return stopped(
      'Failed',
      REASON.targetInUse,
      `${targetRef.kind} ${targetRef.name} is already rolled out by InPlaceRollout ${input.heldBy} (the oldest that names it); this one does nothing while that one exists`,
    );
  }
  if (!w) return stopped('Failed', REASON.targetNotFound, `${targetRef.kind} ${targetRef.name} not found in namespace ${rollout.metadata.namespace ?? 'default'}`);
  if (w.gate) return stopped(w.gate.phase, w.gate.reason, w.gate.message);
  // A StatefulSet or DaemonSet on RollingUpdate: held at admission, or at rest (nothing for its controller to roll).
  const rollingHeld = w.kind === 'StatefulSet' ? w.heldPartition !== undefined || (!!w.updateRevision && w.currentRevision === w.updateRevision) : w.atRest === true;
  if (w.kind !== 'Deployment' && w.updateStrategy !== 'OnDelete' && !rollingHeld) {
    return stopped(
      'Failed',
      REASON.notOnDelete,
      `${w.kind} ${w.name} has updateStrategy ${w.updateStrategy || 'RollingUpdate'}: the stock controller would recreate the pods itself; set updateStrategy.type to OnDelete, or install deploy/workload-hold-policy.yaml (StatefulSets: it holds the change at admission)`,
    );
  }
  // Waiting keeps the last status but for its generation and message.
  const waiting = (message: string) => ({ plan: { actions: [], status: { ...(rollout.status ?? {}), observedGeneration: rollout.metadata.generation, message } } });
  if (w.observedGeneration < w.generation) return waiting(`waiting for the ${w.kind} controller to observe generation ${w.generation}`);
  const { target, ignored } = chooseTarget(w, input.revisions);
  if (!target) {
    const which = w.kind === 'StatefulSet' ? `update revision ${w.updateRevision ?? ''}` : 'revision of its spec.template';
    return waiting(`waiting for the ${w.kind}'s ${which} to be listed`);
  }
  return { workload: w, target, ignored };
}

/** One snapshot as the stages read it: the live pods in update order, the revisions they name, their restarts. */
interface Snapshot extends RoundView {
  conflictOf: Map<string, CreateConflict>;
  partition: number;
  scope: Scope;
  minReadyMs: number;
  /** This rollout's ContainerRestarts of the target revision, by pod. */
  restartOf: Map<string, RestartView>;
}

/** The snapshot of a round from the input, its workload and its target revision. */
function snapshotOf(input: PlanInput, w: WorkloadView, target: RevisionView, ignored: RevisionView[]): Snapshot {
  const { spec } = input.rollout;
  // The revision each pod label names; of two with one hash, the one named as its controller names it
  // (WORKLOAD-HASH) wins, and a revision ignored as not the controller's is never one.
  const own = (r: RevisionView) => Number(r.name === `${w.name}-${r.hash}`);
  const byHash = new Map(input.revisions.filter((r) => !ignored.includes(r)).sort((a, b) => own(a) - own(b)).map((r) => [r.hash, r]));
  const live = input.pods.filter((p) => !p.deleting);
  const partition = Math.max(spec.partition ?? 0, w.heldPartition ?? 0);
  return {
    rollout: input.rollout,
    workload: w,
    target,
    ignored,
    byHash,
    conflictOf: new Map((input.conflicts ?? []).map((c) => [c.name, c])),
    live,
    updated: live.filter((p) => isUpdated(w, target, p)).length,
    partition,
    scope: scopeOf(w, live, partition),
    minReadyMs: (spec.strategy?.minReadySeconds ?? 0) * 1000,
    restartOf: new Map(input.restarts.filter((r) => r.revisionHash === target.hash && r.revisionNumber === target.revision).map((r) => [r.pod, r])),
    now: new Date(input.nowMs).toISOString(),
  };
}
