// Creates a rollout could not make, remembered by the coordinator so that it does not ask again every round:
// a name held by an object the rollout does not own (409), or an object the API server refused (422). Each is
// tried again after a back-off (src/backoff.ts: 1 s, doubling, at most 5 min) and at once when the rollout's spec
// changes (its generation). Meanwhile the planner is told of it (PlanInput.conflicts) and the status names it.
// Held in memory only: a new coordinator tries each once, then backs off in turn.
import { backoffDelay } from '../../backoff.js';
import type { CreateConflict } from './plan-types.js';

/** Back-off of a refused create. */
export const REFUSAL_BACKOFF = { initialMs: 1000, maxMs: 300_000 };

interface Refusal {
  conflict: CreateConflict;
  generation: number;
  attempts: number;
  untilMs: number;
}

/** The refused creates of every rollout, with their back-off. */
export class CreateRefusals {
  private readonly byRollout = new Map<string, Map<string, Refusal>>();

  /** The creates of this rollout (at this generation) still backing off at nowMs; forgets the rest. */
  active(rolloutUid: string, generation: number, nowMs: number): CreateConflict[] {
    const m = this.byRollout.get(rolloutUid);
    if (!m) return [];
    const out: CreateConflict[] = [];
    for (const [name, r] of m) {
      if (r.generation !== generation) m.delete(name);
      else if (nowMs < r.untilMs) out.push(r.conflict);
    }
    if (m.size === 0) this.byRollout.delete(rolloutUid);
    return out;
  }

  /** A create failed again (or for the first time): the next try waits longer. */
  refused(rolloutUid: string, generation: number, conflict: CreateConflict, nowMs: number): void {
    let m = this.byRollout.get(rolloutUid);
    if (!m) this.byRollout.set(rolloutUid, (m = new Map()));
    const prev = m.get(conflict.name);
    const attempts = prev && prev.generation === generation ? prev.attempts + 1 : 1;
    m.set(conflict.name, { conflict, generation, attempts, untilMs: nowMs + backoffDelay(attempts, REFUSAL_BACKOFF) });
  }

  /** The create went through: no more back-off for it. */
  created(rolloutUid: string, name: string): void {
    this.byRollout.get(rolloutUid)?.delete(name);
  }

  /** Forgets every rollout but these (the others are gone). */
  keepOnly(rolloutUids: Set<string>): void {
    for (const uid of this.byRollout.keys()) if (!rolloutUids.has(uid)) this.byRollout.delete(uid);
  }

  /** How many rollouts have a create backing off. */
  get size(): number {
    return this.byRollout.size;
  }
}
