// The names of what a rollout creates. Each is fixed by what it is for (a pod and revision; a revision's
// pre-warm), so that a second coordinator asks for the same object and never starts an update twice. Each holds a
// readable part cut to fit and, where two different inputs could read the same, a digest of the inputs: two
// rollouts whose names and pods run into each other ("a" with pod "b-c-0", "a-b" with pod "c-0"), or names
// too long to keep whole, never share a name. A name is still predictable, so whoever may create the kind can
// take it first: the coordinator checks ownership, never the name alone (ownership.ts).
import { createHash } from 'node:crypto';

/** The longest object name the API server takes (a DNS subdomain). */
export const MAX_NAME = 253;
/** Hex characters of the digest in a name. */
const DIGEST_CHARS = 10;

const digest = (...parts: string[]): string => createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, DIGEST_CHARS);

/** `readable` cut to at most `room` characters, ending in a letter or digit as a DNS name must. */
function cut(readable: string, room: number): string {
  return readable.slice(0, Math.max(0, room)).replace(/[-.]+$/, '');
}

/** The ContainerRestart name for a pod and revision number: ROLLOUT-POD-DIGEST-rN, cut to 253 characters. */
export function restartName(rollout: string, pod: string, revisionNumber: number): string {
  const tail = `-${digest(rollout, pod)}-r${revisionNumber}`;
  return `${cut(`${rollout}-${pod}`, MAX_NAME - tail.length)}${tail}`;
}

/** What every pre-warm name of the rollout with this uid starts with. */
export function prewarmPrefix(rolloutUid: string): string {
  return `ipr-${rolloutUid.slice(0, 8).toLowerCase()}-`;
}

/** The ImagePrewarm name of a rollout's target revision (cluster-scoped, so it carries the rollout's uid). */
export function prewarmName(rolloutUid: string, hash: string): string {
  const name = `${prewarmPrefix(rolloutUid)}${hash}`.toLowerCase();
  if (name.length <= MAX_NAME) return name;
  const tail = `-${digest(rolloutUid, hash)}`;
  return `${cut(name, MAX_NAME - tail.length)}${tail}`;
}
