// The names of what a controller creates. Each is fixed by what it is for (a pod and revision, a pod and image
// set, a pre-warm), so that a second coordinator asks for the same object and never starts an update twice. Each
// holds a readable part cut to fit and a digest of the inputs: two owners whose names and pods run into each
// other ("a" with pod "b-c-0", "a-b" with pod "c-0"), or names too long to keep whole, never share a name. A name
// is still predictable, so whoever may create the kind can take it first: a coordinator checks ownership, never
// the name alone (ownership.ts, create-or-taken.ts).
import { createHash } from 'node:crypto';

/** The longest object name the API server takes (a DNS subdomain). */
export const MAX_NAME = 253;
/** Hex characters of the digest in a name. */
const DIGEST_CHARS = 10;

/** A short digest of the parts (separated, so that ("a", "bc") and ("ab", "c") differ). */
export const digest = (...parts: string[]): string => createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, DIGEST_CHARS);

/** `readable` cut to at most `room` characters, ending in a letter or digit as a DNS name must. */
export function cut(readable: string, room: number): string {
  return readable.slice(0, Math.max(0, room)).replace(/[-.]+$/, '');
}

/** READABLE-DIGEST(parts)SUFFIX, the readable part cut so that the whole is at most MAX_NAME characters. */
export function digestName(readable: string, parts: string[], suffix = ''): string {
  const tail = `-${digest(...parts)}${suffix}`;
  return `${cut(readable, MAX_NAME - tail.length)}${tail}`;
}
