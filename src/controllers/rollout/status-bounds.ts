// The rollout's status within the limits of its CRD (deploy/crds/inplacerollout.yaml), by construction: the one
// status writer (reconcile.ts) passes every status through boundStatus, so no pod name, API server message or
// number of pods can make the API server refuse the write and leave an old status standing. Lists keep their
// first entries (the order the planner reaches the pods in) and the message says how many were left out; texts
// are cut with a note of how much was cut. test/unit/rollout-bounds.test.ts checks these numbers against the CRD.
import type { InPlaceRolloutStatus, RolloutCondition, RolloutFailure } from './types.js';

/** status.message, conditions[].message, failures[].reason: maxLength in the CRD. */
export const MAX_STATUS_TEXT = 4096;
/** status.failures: maxItems. */
export const MAX_FAILURES = 100;
/** status.podsInFlight: maxItems. */
export const MAX_PODS_IN_FLIGHT = 1000;
/** Names in the status (pods, revisions, the coordinator's node): maxLength. */
export const MAX_STATUS_NAME = 253;
/** failures[].container: maxLength. */
export const MAX_CONTAINER_NAME = 63;
/** conditions[].reason and type: maxLength. */
export const MAX_REASON = 64;

/** text at most max characters long: cut, saying how many characters were left out. */
export function boundText(text: string, max = MAX_STATUS_TEXT): string {
  if (text.length <= max) return text;
  // The note's own length depends on the number it states; a generous width keeps the sum under max.
  const note = (n: number) => `... (${n} more characters)`;
  const keep = max - note(text.length).length;
  return `${text.slice(0, keep)}${note(text.length - keep)}`;
}

const bounded = (s: string | undefined, max: number) => (s === undefined ? undefined : s.slice(0, max));

function boundFailure(f: RolloutFailure): RolloutFailure {
  return {
    pod: f.pod.slice(0, MAX_STATUS_NAME),
    ...(f.container !== undefined ? { container: f.container.slice(0, MAX_CONTAINER_NAME) } : {}),
    reason: boundText(f.reason),
    ...(f.exitCode !== undefined ? { exitCode: f.exitCode } : {}),
  };
}

function boundCondition(c: RolloutCondition): RolloutCondition {
  return { ...c, type: c.type.slice(0, MAX_REASON), ...(c.reason !== undefined ? { reason: c.reason.slice(0, MAX_REASON) } : {}), ...(c.message !== undefined ? { message: boundText(c.message) } : {}) };
}

/** The status as the CRD takes it: lists capped (the message says how many entries were left out), texts cut. */
export function boundStatus(status: InPlaceRolloutStatus): InPlaceRolloutStatus {
  const out: InPlaceRolloutStatus = { ...status };
  const notes: string[] = [];
  if (status.failures && status.failures.length > MAX_FAILURES) {
    notes.push(`${status.failures.length - MAX_FAILURES} more failures not listed`);
    out.failures = status.failures.slice(0, MAX_FAILURES);
  }
  if (status.podsInFlight && status.podsInFlight.length > MAX_PODS_IN_FLIGHT) {
    notes.push(`${status.podsInFlight.length - MAX_PODS_IN_FLIGHT} more pods in flight not listed`);
    out.podsInFlight = status.podsInFlight.slice(0, MAX_PODS_IN_FLIGHT);
  }
  if (out.failures) out.failures = out.failures.map(boundFailure);
  if (out.podsInFlight) out.podsInFlight = out.podsInFlight.map((p) => p.slice(0, MAX_STATUS_NAME));
  if (out.conditions) out.conditions = out.conditions.map(boundCondition);
  // The note goes first, so that cutting a long message never cuts it off.
  if (notes.length > 0) out.message = `(${notes.join('; ')}) ${status.message ?? ''}`.trimEnd();
  if (out.message !== undefined) out.message = boundText(out.message);
  for (const k of ['currentRevision', 'updateRevision', 'coordinator'] as const) if (out[k] !== undefined) out[k] = bounded(out[k], MAX_STATUS_NAME);
  return out;
}
