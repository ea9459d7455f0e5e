// How often the rollout's status is written. A round's status says what the rollout is (its phase, conditions,
// failures, revisions, generation) and how far it got (counts, pods in flight, messages). A change of what it is
// is written at once; a change of how far it got alone waits until STATUS_PACE_MS has passed since the last
// write, so that a rollout of pods of about 2 s each writes its counts about once every two or three pods rather
// than at every pod's step (issue 29): the workload's own status (updatedReplicas, kubectl rollout status) is
// the per-pod view, kept by its controller. The status written then is the round's own, from one snapshot, as ever.
import { sameJson } from '../../same-json.js';
import type { InPlaceRolloutStatus } from './types.js';

/** Least time between two status writes that change only counts, pods in flight and messages, ms. */
export const STATUS_PACE_MS = 5000;

/** The status without what may wait: counts, pods in flight and messages (the conditions' too). */
function settled(s: InPlaceRolloutStatus): InPlaceRolloutStatus {
  const { replicas: _r, updatedReplicas: _u, readyReplicas: _ready, podsInFlight: _p, message: _m, ...rest } = s;
  return { ...rest, conditions: (s.conditions ?? []).map(({ message: _cm, ...c }) => c) };
}

/**
 * Whether next is written now ('now'), not at all ('same': it is the stored status), or once the pace allows
 * (the time, ms since the epoch, a round must come back at). lastWriteMs: this coordinator's last write of this
 * rollout's status; none known writes now.
 */
export function statusWrite(stored: InPlaceRolloutStatus | undefined, next: InPlaceRolloutStatus, lastWriteMs: number | undefined, nowMs: number): 'now' | 'same' | number {
  if (sameJson(stored ?? {}, next)) return 'same';
  if (lastWriteMs === undefined || !sameJson(settled(stored ?? {}), settled(next))) return 'now';
  const due = lastWriteMs + STATUS_PACE_MS;
  return due <= nowMs ? 'now' : due;
}

/** When each rollout's status was last written by this coordinator (kept across rounds, in memory only). */
export class StatusWrites {
  private readonly at = new Map<string, number>();

  /** The last write of rollout uid, ms; undefined when none is known. */
  last(uid: string): number | undefined {
    return this.at.get(uid);
  }

  /** Notes a write of rollout uid at nowMs. */
  wrote(uid: string, nowMs: number): void {
    this.at.set(uid, nowMs);
  }

  /** Forgets every rollout but these. */
  keepOnly(uids: Set<string>): void {
    for (const uid of this.at.keys()) if (!uids.has(uid)) this.at.delete(uid);
  }
}
