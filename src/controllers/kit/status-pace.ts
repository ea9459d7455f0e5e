// How often a coordinator writes an object's status. A round's status says what the object is (its phase,
// conditions, failures, generation) and how far it got (counts, pods in flight, messages). A change of what it is
// is written at once; a change of how far it got alone waits until STATUS_PACE_MS has passed since the last
// write, so that an update of pods of about 2 s each writes its counts about once every two or three pods rather
// than at every pod's step (issue 29). The status written then is the round's own, from one snapshot, as ever.
import { sameJson } from '../../same-json.js';

/** Least time between two status writes that change only counts, pods in flight and messages, ms. */
export const STATUS_PACE_MS = 5000;

/** A status: conditions with messages, and other fields. */
type Status = { conditions?: { message?: string }[] } & object;

/** The status without what may wait: the progress fields named, and the conditions' messages. */
function settled(s: Status, progress: readonly string[]): object {
  const rest: Record<string, unknown> = { ...s };
  for (const k of progress) delete rest[k];
  return { ...rest, conditions: (s.conditions ?? []).map(({ message: _cm, ...c }) => c) };
}

/**
 * Whether next is written now ('now'), not at all ('same': it is the stored status), or once the pace allows
 * (the time, ms since the epoch, a round must come back at). progress: the top-level fields that may wait (with
 * the conditions' messages). lastWriteMs: this coordinator's last write of this object's status; none known
 * writes now.
 */
export function statusWrite<S extends Status>(stored: S | undefined, next: S, lastWriteMs: number | undefined, nowMs: number, progress: readonly (keyof S & string)[]): 'now' | 'same' | number {
  if (sameJson(stored ?? {}, next)) return 'same';
  if (lastWriteMs === undefined || !sameJson(settled(stored ?? {}, progress), settled(next, progress))) return 'now';
  const due = lastWriteMs + STATUS_PACE_MS;
  return due <= nowMs ? 'now' : due;
}

/** When each object's status was last written by this coordinator (kept across rounds, in memory only). */
export class StatusWrites {
  private readonly at = new Map<string, number>();

  /** The last write of the object with this uid, ms; undefined when none is known. */
  last(uid: string): number | undefined {
    return this.at.get(uid);
  }

  /** Notes a write of the object with this uid at nowMs. */
  wrote(uid: string, nowMs: number): void {
    this.at.set(uid, nowMs);
  }

  /** Forgets every object but these. */
  keepOnly(uids: Set<string>): void {
    for (const uid of this.at.keys()) if (!uids.has(uid)) this.at.delete(uid);
  }
}
