// Gates, the planner's last stage: from the classes and the budget, the verdict of this round (a failure, a
// fallback that pauses, done, paused, the pre-warm first) and which candidates may start now. Pure.
import { restartName, prewarmName } from './names.js';
import { REASON } from './plan-types.js';
import type { CreateConflict, PodView, PrewarmView, RevisionView, RolloutAction, WorkloadView } from './plan-types.js';
import type { InPlaceRolloutSpec, RolloutPhase } from './types.js';
import type { Classes } from './plan-classify.js';
import type { Budget, Scope } from './plan-budget.js';
import { PREWARM_RECHECK_MS, PREWARM_SILENT_HINT_MS } from '../kit/prewarm-settings.js';

/** What the gates read: one snapshot, classified and budgeted. */
export interface GateInput {
  rolloutName: string;
  rolloutUid: string;
  spec: InPlaceRolloutSpec;
  workload: WorkloadView;
  target: RevisionView;
  classes: Classes;
  budget: Budget;
  scope: Scope;
  partition: number;
  live: PodView[];
  updated: number;
  available: (p: PodView) => boolean;
  minReadyMs: number;
  /** Whether any pod of this revision was given a ContainerRestart: then the pre-warm is behind us. */
  started: boolean;
  prewarm?: PrewarmView;
  conflictOf: Map<string, CreateConflict>;
  nowMs: number;
}

/** This round's verdict: the phase and why, the actions the gates add, and the pods they start. */
export interface Verdict {
  phase: RolloutPhase;
  reason: string;
  message: string;
  progressing: 'True' | 'False';
  /** The ImagePrewarm this round needs, if any. */
  prewarm?: string;
  wakeAtMs?: number;
  actions: RolloutAction[];
  /** Pods started this round (restart or recreate), in update order. */
  started: string[];
}

const verdict = (phase: RolloutPhase, reason: string, message: string, progressing: 'True' | 'False', more: Partial<Verdict> = {}): Verdict => ({
  phase,
  reason,
  message,
  progressing,
  actions: [],
  started: [],
  ...more,
});

/** The first gate that holds decides; if none does, candidates start in update order within the budget. */
export function gateRound(g: GateInput): Verdict {
  return failureGate(g) ?? fallbackGate(g) ?? doneGate(g) ?? pausedGate(g) ?? prewarmGate(g) ?? startWithinBudget(g);
}

/** A failure stops every further start: Failed, or Paused under failurePolicy Pause (never for a create refused). */
export function failureGate(g: GateInput): Verdict | undefined {
  const { failures, conflictFirst } = g.classes;
  if (failures.length === 0) return undefined;
  const f = failures[0];
  const message = `pod ${f.pod}${f.container ? ` container ${f.container}` : ''}: ${f.reason}${f.exitCode !== undefined ? ` (exit code ${f.exitCode})` : ''}; no further pod is started`;
  // A create the rollout could not make is no pod's failure: failurePolicy does not apply, the rollout failed.
  if (conflictFirst) return verdict('Failed', conflictFirst, message, 'False');
  return verdict(g.spec.strategy?.failurePolicy === 'Pause' ? 'Paused' : 'Failed', REASON.podFailed, message, 'False');
}

/** Under fallback Pause (the default), a pod that cannot be updated in place pauses the rollout. */
export function fallbackGate(g: GateInput): Verdict | undefined {
  const cannot = g.classes.candidates.filter((c) => c.fallback);
  if (cannot.length === 0 || (g.spec.fallback ?? 'Pause') !== 'Pause') return undefined;
  const blocked = cannot.map((c) => `pod ${c.pod.name}: ${c.fallback}`);
  return verdict('Paused', REASON.notInPlace, `cannot update in place (fallback Pause): ${blocked.join('; ')}`, 'False');
}

/** Nothing left to start, in flight, unscheduled or missing: Succeeded once every pod in scope is available. */
export function doneGate(g: GateInput): Verdict | undefined {
  const { candidates, inFlight, unscheduled } = g.classes;
  if (candidates.length > 0 || inFlight.size > 0 || unscheduled.length > 0 || g.budget.missing > 0) return undefined;
  const { order, inScope } = g.scope;
  const at = `${g.updated} of ${g.live.length} pods at revision ${g.target.hash}`;
  // Every pod is at the revision, but Succeeded means available too (as a Deployment's Complete does): the last
  // pod is relabelled when its restart succeeds, which can be a moment before the kubelet reports it Ready.
  const waitingFor = order.filter((p) => inScope.has(p.name) && !g.available(p)).map((p) => p.name);
  if (waitingFor.length > 0) {
    const forHowLong = g.minReadyMs > 0 ? ` for ${g.minReadyMs / 1000} s` : '';
    return verdict('Progressing', REASON.updating, `${at}; waiting for ${waitingFor.join(', ')} to be Ready${forHowLong}`, 'True');
  }
  const scope = g.partition > 0 ? ` (partition ${g.partition}: ${g.live.length - inScope.size} pods keep their revision)` : '';
  return verdict('Succeeded', REASON.complete, `${at}${scope}`, 'False');
}

/** spec.paused: nothing starts. */
export function pausedGate(g: GateInput): Verdict | undefined {
  if (!g.spec.paused) return undefined;
  return verdict('Paused', REASON.paused, `paused with ${g.classes.inFlight.size} pods in flight and ${g.classes.candidates.length} to go`, 'False');
}

/**
 * Before the first pod of this revision is touched, every node holding a target pod pulls (when spec.prewarm asks:
 * off by default, as the agents run it only with the fleet pre-warm's opt-in RBAC). Holds until the pull is done.
 */
export function prewarmGate(g: GateInput): Verdict | undefined {
  const images = [...g.classes.imagesToWarm].sort();
  if (!(g.spec.prewarm ?? false) || g.started || images.length === 0) return undefined;
  const name = prewarmName(g.rolloutUid, g.target.hash);
  const pw = g.prewarm?.name === name ? g.prewarm : undefined;
  const conflict = g.conflictOf.get(name);
  if (conflict) return verdict('Failed', conflict.reason, `pre-warm ImagePrewarm ${name}: ${conflict.message}; no pod touched`, 'False', { prewarm: name });
  if (pw && pw.failedNodes.length > 0) {
    const msg = pw.failedNodes.map((n) => `node ${n.node}: ${n.reason}`).join('; ');
    return verdict('Paused', REASON.prewarmFailed, `pre-warm ${name} failed, no pod touched: ${msg}`, 'False', { prewarm: name });
  }
  if (pw?.done) return undefined;
  const silent = pw?.silentSinceMs !== undefined && g.nowMs - pw.silentSinceMs >= PREWARM_SILENT_HINT_MS;
  // The agents follow ImagePrewarms with deploy/rbac.yaml, but record and sum up their parts only with the opt-in file.
  const hint = silent ? `; no agent has reported on it within ${PREWARM_SILENT_HINT_MS / 1000} s: apply deploy/optional/fleet-prewarm-rbac.yaml, or set prewarm: false` : '';
  return verdict('Prewarming', REASON.prewarming, `pulling ${images.join(', ')} on the nodes of the ${g.workload.kind}'s pods (ImagePrewarm ${name})${hint}`, 'True', {
    prewarm: name,
    wakeAtMs: g.nowMs + PREWARM_RECHECK_MS,
    actions: pw ? [] : [{ kind: 'prewarm', name, images }],
  });
}

/** Candidates start in update order while the budget lasts; a pod already unavailable costs nothing. */
export function startWithinBudget(g: GateInput): Verdict {
  const { candidates, inFlight, unscheduled } = g.classes;
  const { target } = g;
  const actions: RolloutAction[] = [];
  const started: string[] = [];
  let room = g.budget.room;
  for (const c of candidates) {
    const cost = g.available(c.pod) ? 1 : 0;
    if (room - cost < 0) break;
    room -= cost;
    started.push(c.pod.name);
    if (c.fallback) actions.push({ kind: 'recreate', pod: c.pod.name, podUid: c.pod.uid, reason: c.fallback });
    else actions.push({ kind: 'restart', name: restartName(g.rolloutName, c.pod.name, target.revision), pod: c.pod.name, podUid: c.pod.uid, containers: c.images, revisionHash: target.hash, revisionNumber: target.revision });
  }
  const toGo = candidates.length - started.length;
  const notOnANode = unscheduled.length > 0 ? `, ${unscheduled.length} not on a node yet (${unscheduled.join(', ')})` : '';
  const notCreated = g.budget.missing > 0 ? `, ${g.budget.missing} not created yet` : '';
  const message = `${g.updated} of ${g.live.length} pods updated, ${inFlight.size + started.length} in flight, ${toGo} waiting${notOnANode}${notCreated} (maxUnavailable ${g.budget.maxUnavailable})`;
  return verdict('Progressing', REASON.updating, message, 'True', { actions, started });
}
