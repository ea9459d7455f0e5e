// Creates a coordinator could not make, remembered by the coordinator so that it does not ask again every round:
// a name held by an object its owner does not own (409), or an object the API server refused (422). Each is
// tried again after a back-off (src/backoff.ts: 1 s, doubling, at most 5 min) and at once when the owner's spec
// changes (its generation). Meanwhile the planner is told of it (PlanInput.conflicts) and the status names it.
// Held in memory only: a new coordinator tries each once, then backs off in turn.
import { backoffDelay } from '../../backoff.js';
import type { CreateConflict } from './create-or-taken.js';

/** Back-off of a refused create. */
export const REFUSAL_BACKOFF = { initialMs: 1000, maxMs: 300_000 };

interface Refusal {
  conflict: CreateConflict;
  generation: number;
  attempts: number;
  untilMs: number;
}

/** The refused creates of every owner (a rollout, a SidecarSet), with their back-off. */
export class CreateRefusals {
  private readonly byOwner = new Map<string, Map<string, Refusal>>();

  /** The creates of this owner (at this generation) still backing off at nowMs; forgets the rest. */
  active(ownerUid: string, generation: number, nowMs: number): CreateConflict[] {
    const m = this.byOwner.get(ownerUid);
    if (!m) return [];
    const out: CreateConflict[] = [];
    for (const [name, r] of m) {
      if (r.generation !== generation) m.delete(name);
      else if (nowMs < r.untilMs) out.push(r.conflict);
    }
    if (m.size === 0) this.byOwner.delete(ownerUid);
    return out;
  }

  /** A create failed again (or for the first time): the next try waits longer. */
  refused(ownerUid: string, generation: number, conflict: CreateConflict, nowMs: number): void {
    let m = this.byOwner.get(ownerUid);
    if (!m) this.byOwner.set(ownerUid, (m = new Map()));
    const prev = m.get(conflict.name);
    const attempts = prev && prev.generation === generation ? prev.attempts + 1 : 1;
    m.set(conflict.name, { conflict, generation, attempts, untilMs: nowMs + backoffDelay(attempts, REFUSAL_BACKOFF) });
  }

  /** The create went through: no more back-off for it. */
  created(ownerUid: string, name: string): void {
    this.byOwner.get(ownerUid)?.delete(name);
  }

  /** Forgets every owner but these (the others are gone). */
  keepOnly(ownerUids: Set<string>): void {
    for (const uid of this.byOwner.keys()) if (!ownerUids.has(uid)) this.byOwner.delete(uid);
  }

  /** How many owners have a create backing off. */
  get size(): number {
    return this.byOwner.size;
  }
}
