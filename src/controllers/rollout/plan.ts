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
import { imageMatches } from '../../image-ref.js';
import { restartName, prewarmName } from './names.js';
import { chooseTarget, ignoredMessage } from './revisions.js';
import { diffTemplates, mapChanges } from './template-diff.js';
import { COMPLETE, IGNORED_REVISIONS, POD_TEMPLATE_ANNOTATION, PROGRESSING, REASON, REVISION_HASH_LABEL, TEMPLATE_GENERATION_LABEL } from './plan-types.js';
import { type Plan, type PlanInput, type PodView, type RevisionView, type RolloutAction, type WorkloadView } from './plan-types.js';
import type { InPlaceRolloutStatus, RolloutCondition, RolloutFailure, RolloutPhase } from './types.js';
import { keepTransition } from '../../k8s/conditions.js';
import { inPartition, resolveMaxUnavailable } from '../kit/budget.js';
import { PREWARM_RECHECK_MS, PREWARM_SILENT_HINT_MS } from '../kit/prewarm-settings.js';

export * from './plan-types.js';
export { restartName, prewarmName } from './names.js';
export { targetRevision } from './revisions.js';

/** maxUnavailable as a number of pods (kit/budget.ts). */
export { resolveMaxUnavailable } from '../kit/budget.js';

/** Whether the stock controller counts the pod as of the target revision. */
function isUpdated(w: WorkloadView, target: RevisionView, p: PodView): boolean {
  if (p.revisionHash === target.hash) return true;
  return w.kind === 'DaemonSet' && w.templateGeneration !== undefined && p.templateGeneration === String(w.templateGeneration);
}

/** The pods in the order they are updated, and how many of them (from the front) are in scope. */
function ordered(w: WorkloadView, pods: PodView[], partition: number): { order: PodView[]; inScope: Set<string> } {
  if (w.kind === 'StatefulSet') {
    const order = [...pods].sort((a, b) => (b.ordinal ?? -1) - (a.ordinal ?? -1));
    return { order, inScope: new Set(order.filter((p) => (p.ordinal ?? -1) >= partition).map((p) => p.name)) };
  }
  const order = [...pods].sort((a, b) => ((a.nodeName ?? '') < (b.nodeName ?? '') ? -1 : (a.nodeName ?? '') > (b.nodeName ?? '') ? 1 : a.name < b.name ? -1 : 1));
  return { order, inScope: new Set(inPartition(order, partition).map((p) => p.name)) };
}

/** The condition next, keeping its lastTransitionTime from prev while its status stays the same. */
export function condition(prev: InPlaceRolloutStatus | undefined, next: Omit<RolloutCondition, 'lastTransitionTime'>, now: string): RolloutCondition {
  return keepTransition<RolloutCondition>(prev?.conditions, next, now);
}

/** What to do next, and the status: see the table at the top of this file. */
export function planRollout(input: PlanInput): Plan {
  const { rollout, workload: w, nowMs } = input;
  const spec = rollout.spec;
  const prev = rollout.status;
  const now = new Date(nowMs).toISOString();
  const base: InPlaceRolloutStatus = { observedGeneration: rollout.metadata.generation };

  const stopped = (phase: RolloutPhase, reason: string, message: string, extra: InPlaceRolloutStatus = {}): Plan => ({
    actions: [],
    status: {
      ...base,
      ...extra,
      phase,
      message,
      conditions: [condition(prev, { type: PROGRESSING, status: 'False', reason, message }, now), condition(prev, { type: COMPLETE, status: 'False', reason, message }, now)],
    },
  });

  if (input.heldBy) {
    return stopped(
      'Failed',
      REASON.targetInUse,
      `${spec.targetRef.kind} ${spec.targetRef.name} is already rolled out by InPlaceRollout ${input.heldBy} (the oldest that names it); this one does nothing while that one exists`,
    );
  }
  if (!w) return stopped('Failed', REASON.targetNotFound, `${spec.targetRef.kind} ${spec.targetRef.name} not found in namespace ${rollout.metadata.namespace ?? 'default'}`);
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
  const waiting = (message: string): Plan => ({ actions: [], status: { ...(prev ?? {}), ...base, message } });
  if (w.observedGeneration < w.generation) return waiting(`waiting for the ${w.kind} controller to observe generation ${w.generation}`);
  const { target, ignored } = chooseTarget(w, input.revisions);
  if (!target) {
    const which = w.kind === 'StatefulSet' ? `update revision ${w.updateRevision ?? ''}` : 'revision of its spec.template';
    return waiting(`waiting for the ${w.kind}'s ${which} to be listed`);
  }

  // The revision each pod label names; of two with one hash, the one named as its controller names it
  // (WORKLOAD-HASH) wins, and a revision ignored as not the controller's is never one.
  const own = (r: RevisionView) => Number(r.name === `${w.name}-${r.hash}`);
  const byHash = new Map(input.revisions.filter((r) => !ignored.includes(r)).sort((a, b) => own(a) - own(b)).map((r) => [r.hash, r]));
  const conflictOf = new Map((input.conflicts ?? []).map((c) => [c.name, c]));
  const live = input.pods.filter((p) => !p.deleting);
  const partition = Math.max(spec.partition ?? 0, w.heldPartition ?? 0);
  const { order, inScope } = ordered(w, live, partition);
  const minReadyMs = (spec.strategy?.minReadySeconds ?? 0) * 1000;
  const available = (p: PodView) => p.ready && (p.readySinceMs === undefined || nowMs - p.readySinceMs >= minReadyMs);
  const wanted = (target.template.spec?.containers ?? []).filter((c) => c.image);
  const restartOf = new Map(input.restarts.filter((r) => r.revisionHash === target.hash && r.revisionNumber === target.revision).map((r) => [r.pod, r]));
  // A pod under update is back (as the stock controllers count it: Ready for minReadySeconds) once every container
  // runs its target image and is ready, and each container its update restarts started after the update was asked
  // for: before the drain it is still Ready with the old containers, which does not count (a same-image restart,
  // kubectl rollout restart's, runs the target image before it as after it).
  const back = (p: PodView) => {
    const r = restartOf.get(p.name);
    const restarted = (name: string) => !r || r.createdMs === undefined || !(r.containers ?? []).includes(name) || p.statuses?.some((s) => s.name === name && (s.startedAtMs ?? 0) > (r.createdMs as number));
    return available(p) && wanted.every((c) => p.containers.find((x) => x.name === c.name)?.image === c.image && restarted(c.name) && p.statuses?.some((s) => s.name === c.name && s.ready && imageMatches(s.image, c.image as string)));
  };

  const actions: RolloutAction[] = [];
  const inFlight = new Set<string>();
  const failures: RolloutFailure[] = [];
  const blocked: string[] = [];
  type Candidate = { pod: PodView; images: { name: string; image: string }[]; fallback?: string };
  const candidates: Candidate[] = [];
  const unscheduled: string[] = [];
  const imagesToWarm = new Set<string>();
  /** The reason of the first failure when it is a create the rollout could not make. */
  let conflictFirst: string | undefined;
  // Once any pod of this revision was given a ContainerRestart, the pre-warm is behind us.
  const started = restartOf.size > 0;

  for (const p of order) {
    if (isUpdated(w, target, p)) continue;
    if (!inScope.has(p.name)) continue;
    const r = restartOf.get(p.name);
    if (r?.phase === 'Failed') {
      failures.push({ pod: p.name, container: r.failure?.container, reason: r.failure?.reason ?? 'failed', ...(r.failure?.exitCode !== undefined ? { exitCode: r.failure.exitCode } : {}) });
      continue;
    }
    if (r && r.phase !== 'Succeeded') {
      inFlight.add(p.name);
      continue;
    }
    // Not on a node (yet): no agent could update it. It stays behind, and unavailable, until it is scheduled.
    if (!p.nodeName) {
      unscheduled.push(p.name);
      continue;
    }
    const from = byHash.get(p.revisionHash);
    const diff = from ? diffTemplates(from.template, target.template) : undefined;
    // A template annotation changed (kubectl rollout restart, Reloader): a Deployment's pod restarts every container in place.
    const restartAll = w.kind === 'Deployment' && r?.phase !== 'Succeeded' && Object.keys(diff?.annotations ?? {}).length > 0;
    const images = wanted.filter((c) => restartAll || p.containers.find((x) => x.name === c.name)?.image !== c.image).map((c) => ({ name: c.name, image: c.image as string }));
    if (images.length === 0 && (diff ? diff.other.length === 0 : r?.phase === 'Succeeded')) {
      // Spec at the target: only the labels are left (the restart succeeded, or nothing but labels changed).
      inFlight.add(p.name);
      actions.push({ kind: 'relabel', pod: p.name, podUid: p.uid, ...relabelling(w, target, p, diff) });
      continue;
    }
    if (r?.phase === 'Succeeded') {
      failures.push({ pod: p.name, reason: `the pod's images changed after its update (${images.map((c) => c.name).join(', ')} no longer at the target)` });
      continue;
    }
    const fallback = !from ? `its revision ${p.revisionHash || '(none)'} is no longer listed, so what changed is unknown` : diff && diff.other.length > 0 ? `${diff.other.join(', ')} changed` : undefined;
    const conflict = fallback ? undefined : conflictOf.get(restartName(rollout.metadata.name, p.name, target.revision));
    if (conflict) {
      // Never counted as started: the object under that name is not this rollout's update of the pod.
      failures.push({ pod: p.name, reason: `${conflict.reason}: ${conflict.message}` });
      if (failures.length === 1) conflictFirst = conflict.reason;
      continue;
    }
    if (!fallback) for (const c of images) if (p.containers.find((x) => x.name === c.name)?.image !== c.image) imagesToWarm.add(c.image);
    candidates.push({ pod: p, images, fallback });
  }

  const updated = live.filter((p) => isUpdated(w, target, p)).length;
  const ready = live.filter((p) => p.ready).length;
  const oldest = [...new Set(live.map((p) => p.revisionHash))].map((h) => byHash.get(h)).filter((r) => r !== undefined).sort((a, b) => a.revision - b.revision)[0];
  const counts: InPlaceRolloutStatus = {
    ...base,
    currentRevision: oldest?.hash ?? target.hash,
    updateRevision: target.hash,
    replicas: live.length,
    updatedReplicas: updated,
    readyReplicas: ready,
  };

  // Budget: pods not available, pods missing, and pods in flight (once each), against maxUnavailable.
  const maxUnavailable = resolveMaxUnavailable(w.maxUnavailable ?? spec.maxUnavailable, w.desired);
  const unavailable = new Set(live.filter((p) => !available(p)).map((p) => p.name));
  for (const p of live) if (inFlight.has(p.name) && !back(p)) unavailable.add(p.name);
  let budget = maxUnavailable - unavailable.size - Math.max(0, w.desired - live.length);

  // A pod Ready but not yet for minReadySeconds becomes available with no event to say so.
  const due = live.filter((p) => p.ready && p.readySinceMs !== undefined && p.readySinceMs + minReadyMs > nowMs).map((p) => (p.readySinceMs ?? 0) + minReadyMs);
  // A revision that claims to be newer than the template's: never the target, but said.
  const untrusted: RolloutCondition[] =
    ignored.length > 0 ? [condition(prev, { type: IGNORED_REVISIONS, status: 'True', reason: REASON.revisionNotFromTemplate, message: ignoredMessage(w, target, ignored) }, now)] : [];
  const finish = (phase: RolloutPhase, reason: string, message: string, progressing: 'True' | 'False', prewarm?: string, wakeAtMs?: number): Plan => ({
    actions,
    prewarm,
    ...(due.length > 0 || wakeAtMs !== undefined ? { wakeAtMs: Math.min(...due, wakeAtMs ?? Infinity) } : {}),
    status: {
      ...counts,
      phase,
      message,
      podsInFlight: [...inFlight],
      failures,
      conditions: [
        condition(prev, { type: PROGRESSING, status: progressing, reason, message }, now),
        condition(prev, { type: COMPLETE, status: phase === 'Succeeded' ? 'True' : 'False', reason: phase === 'Succeeded' ? REASON.complete : reason, message }, now),
        ...untrusted,
      ],
    },
  });

  if (failures.length > 0) {
    const f = failures[0];
    const message = `pod ${f.pod}${f.container ? ` container ${f.container}` : ''}: ${f.reason}${f.exitCode !== undefined ? ` (exit code ${f.exitCode})` : ''}; no further pod is started`;
    // A create the rollout could not make is no pod's failure: failurePolicy does not apply, the rollout failed.
    if (conflictFirst) return finish('Failed', conflictFirst, message, 'False');
    return finish(spec.strategy?.failurePolicy === 'Pause' ? 'Paused' : 'Failed', REASON.podFailed, message, 'False');
  }
  const cannot = candidates.filter((c) => c.fallback);
  if (cannot.length > 0 && (spec.fallback ?? 'Pause') === 'Pause') {
    blocked.push(...cannot.map((c) => `pod ${c.pod.name}: ${c.fallback}`));
    return finish('Paused', REASON.notInPlace, `cannot update in place (fallback Pause): ${blocked.join('; ')}`, 'False');
  }
  // Pods the controller has yet to create (one deleted by fallback Recreate, say) are not updated yet either.
  const missing = Math.max(0, w.desired - live.length);
  if (candidates.length === 0 && inFlight.size === 0 && unscheduled.length === 0 && missing === 0) {
    // Every pod is at the revision, but Succeeded means available too (as a Deployment's Complete does): the last
    // pod is relabelled when its restart succeeds, which can be a moment before the kubelet reports it Ready.
    const waitingFor = order.filter((p) => inScope.has(p.name) && !available(p)).map((p) => p.name);
    if (waitingFor.length > 0) {
      const forHowLong = minReadyMs > 0 ? ` for ${minReadyMs / 1000} s` : '';
      return finish('Progressing', REASON.updating, `${updated} of ${live.length} pods at revision ${target.hash}; waiting for ${waitingFor.join(', ')} to be Ready${forHowLong}`, 'True');
    }
    const scope = partition > 0 ? ` (partition ${partition}: ${live.length - inScope.size} pods keep their revision)` : '';
    return finish('Succeeded', REASON.complete, `${updated} of ${live.length} pods at revision ${target.hash}${scope}`, 'False');
  }
  if (spec.paused) return finish('Paused', REASON.paused, `paused with ${inFlight.size} pods in flight and ${candidates.length} to go`, 'False');

  // Pre-warm: before the first pod of this revision is touched, every node holding a target pod pulls.
  // Off unless asked for (the CRD's default): the agents run it only with the fleet pre-warm's opt-in RBAC.
  if ((spec.prewarm ?? false) && !started && imagesToWarm.size > 0) {
    const name = prewarmName(rollout.metadata.uid ?? '', target.hash);
    const pw = input.prewarm?.name === name ? input.prewarm : undefined;
    const conflict = conflictOf.get(name);
    if (conflict) return finish('Failed', conflict.reason, `pre-warm ImagePrewarm ${name}: ${conflict.message}; no pod touched`, 'False', name);
    if (pw && pw.failedNodes.length > 0) {
      const msg = pw.failedNodes.map((n) => `node ${n.node}: ${n.reason}`).join('; ');
      return finish('Paused', REASON.prewarmFailed, `pre-warm ${name} failed, no pod touched: ${msg}`, 'False', name);
    }
    if (!pw || !pw.done) {
      if (!pw) actions.push({ kind: 'prewarm', name, images: [...imagesToWarm].sort() });
      const silent = pw?.silentSinceMs !== undefined && nowMs - pw.silentSinceMs >= PREWARM_SILENT_HINT_MS;
      // The agents follow ImagePrewarms with deploy/rbac.yaml, but record and sum up their parts only with the opt-in file.
      const hint = silent ? `; no agent has reported on it within ${PREWARM_SILENT_HINT_MS / 1000} s: apply deploy/optional/fleet-prewarm-rbac.yaml, or set prewarm: false` : '';
      return finish('Prewarming', REASON.prewarming, `pulling ${[...imagesToWarm].sort().join(', ')} on the nodes of the ${w.kind}'s pods (ImagePrewarm ${name})${hint}`, 'True', name, nowMs + PREWARM_RECHECK_MS);
    }
  }

  for (const c of candidates) {
    const cost = available(c.pod) ? 1 : 0;
    if (budget - cost < 0) break;
    budget -= cost;
    inFlight.add(c.pod.name);
    if (c.fallback) actions.push({ kind: 'recreate', pod: c.pod.name, podUid: c.pod.uid, reason: c.fallback });
    else actions.push({ kind: 'restart', name: restartName(rollout.metadata.name, c.pod.name, target.revision), pod: c.pod.name, podUid: c.pod.uid, containers: c.images, revisionHash: target.hash, revisionNumber: target.revision });
  }
  const toGo = candidates.filter((c) => !inFlight.has(c.pod.name)).length;
  const notOnANode = unscheduled.length > 0 ? `, ${unscheduled.length} not on a node yet (${unscheduled.join(', ')})` : '';
  const notCreated = missing > 0 ? `, ${missing} not created yet` : '';
  return finish('Progressing', REASON.updating, `${updated} of ${live.length} pods updated, ${inFlight.size} in flight, ${toGo} waiting${notOnANode}${notCreated} (maxUnavailable ${maxUnavailable})`, 'True');
}

/** The pod patch that finishes an update: the new revision's labels, annotations and revision labels. */
function relabelling(w: WorkloadView, target: RevisionView, p: PodView, diff: ReturnType<typeof diffTemplates> | undefined): { labels: Record<string, string | null>; annotations: Record<string, string | null> } {
  const labels = { ...(diff?.labels ?? mapChanges({}, target.template.metadata?.labels)) };
  const annotations = { ...(diff?.annotations ?? {}) };
  if (w.marksPods) annotations[POD_TEMPLATE_ANNOTATION] = target.hash;
  else labels[REVISION_HASH_LABEL] = target.hash;
  if (w.kind === 'DaemonSet' && w.templateGeneration !== undefined) labels[TEMPLATE_GENERATION_LABEL] = String(w.templateGeneration);
  // Only what differs from the pod as it is.
  for (const [k, v] of Object.entries(labels)) if ((p.labels[k] ?? null) === v) delete labels[k];
  for (const [k, v] of Object.entries(annotations)) if ((p.annotations[k] ?? null) === v) delete annotations[k];
  return { labels, annotations };
}
