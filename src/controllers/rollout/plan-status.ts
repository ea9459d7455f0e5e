// The rollout's status, written whole from one snapshot and the round's verdict (plan-gates.ts): the counts, the
// phase and message, the pods in flight, the failures and the conditions. Pure. Of the last status only each
// condition's lastTransitionTime is kept while its status stays the same (k8s/conditions.ts).
import { ignoredMessage } from './revisions.js';
import { COMPLETE, IGNORED_REVISIONS, PROGRESSING, REASON } from './plan-types.js';
import type { PodView, RevisionView, WorkloadView } from './plan-types.js';
import type { Classes } from './plan-classify.js';
import type { Verdict } from './plan-gates.js';
import type { InPlaceRollout, InPlaceRolloutStatus, RolloutCondition, RolloutPhase } from './types.js';
import { keepTransition } from '../../k8s/conditions.js';

/** The condition next, keeping its lastTransitionTime from prev while its status stays the same. */
export function condition(prev: InPlaceRolloutStatus | undefined, next: Omit<RolloutCondition, 'lastTransitionTime'>, now: string): RolloutCondition {
  return keepTransition<RolloutCondition>(prev?.conditions, next, now);
}

/** The status of a rollout that does nothing (its target held by another, missing, or not on OnDelete). */
export function stoppedStatus(rollout: InPlaceRollout, phase: RolloutPhase, reason: string, message: string, now: string): InPlaceRolloutStatus {
  const prev = rollout.status;
  return {
    observedGeneration: rollout.metadata.generation,
    phase,
    message,
    conditions: [condition(prev, { type: PROGRESSING, status: 'False', reason, message }, now), condition(prev, { type: COMPLETE, status: 'False', reason, message }, now)],
  };
}

/** What a round's status is computed from: the snapshot the stages read. */
export interface RoundView {
  rollout: InPlaceRollout;
  workload: WorkloadView;
  target: RevisionView;
  /** Revisions of the DaemonSet that claim to be newer than the target's (revisions.ts): said, never used. */
  ignored: RevisionView[];
  /** The revision each pod label names. */
  byHash: Map<string, RevisionView>;
  live: PodView[];
  updated: number;
  now: string;
}

/** The status of a round: the counts of the live pods, and the verdict with the pods in flight and the failures. */
export function roundStatus(v: RoundView, classes: Classes, verdict: Verdict): InPlaceRolloutStatus {
  const { live, target, now } = v;
  const prev = v.rollout.status;
  const oldest = [...new Set(live.map((p) => p.revisionHash))]
    .map((h) => v.byHash.get(h))
    .filter((r) => r !== undefined)
    .sort((a, b) => a.revision - b.revision)[0];
  const { phase, reason, message } = verdict;
  const done = phase === 'Succeeded';
  // A revision that claims to be newer than the template's: never the target, but said.
  const untrusted: RolloutCondition[] =
    v.ignored.length > 0 ? [condition(prev, { type: IGNORED_REVISIONS, status: 'True', reason: REASON.revisionNotFromTemplate, message: ignoredMessage(v.workload, target, v.ignored) }, now)] : [];
  return {
    observedGeneration: v.rollout.metadata.generation,
    currentRevision: oldest?.hash ?? target.hash,
    updateRevision: target.hash,
    replicas: live.length,
    updatedReplicas: v.updated,
    readyReplicas: live.filter((p) => p.ready).length,
    phase,
    message,
    podsInFlight: [...classes.inFlight, ...verdict.started],
    failures: classes.failures,
    conditions: [
      condition(prev, { type: PROGRESSING, status: verdict.progressing, reason, message }, now),
      condition(prev, { type: COMPLETE, status: done ? 'True' : 'False', reason: done ? REASON.complete : reason, message }, now),
      ...untrusted,
    ],
  };
}
