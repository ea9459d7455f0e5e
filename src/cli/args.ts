// Checks of inplacectl's arguments that need no agent: wrong whatever the node holds, refused with exit 2.
import { asAgentError } from '../errors.js';
import { durationFlagMs } from '../duration.js';
import { parseImageRef } from '../image-ref.js';
import { MIN_ID_PREFIX } from '../id-prefix.js';

/** Bad usage found after parsing (exit 2). */
export class UsageError extends Error {}

/** Appends a repeated flag's value (no default array: help would print `(default: [])`). */
export function collect(value: string, prev: string[] | undefined): string[] {
  return [...(prev ?? []), value];
}

/** `--image NAME=IMAGE` values as a map; every image reference parsed before anything is sent. */
export function parseImageFlags(values: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values ?? []) {
    const eq = v.indexOf('=');
    if (eq <= 0 || eq === v.length - 1) throw new UsageError(`--image takes CONTAINER=IMAGE, got "${v}"`);
    const name = v.slice(0, eq);
    const image = v.slice(eq + 1);
    try {
      parseImageRef(image);
    } catch (err) {
      throw new UsageError(asAgentError(err).message);
    }
    out[name] = image;
  }
  return out;
}

/** What 0 means for the clients' duration flags that take it; the others refuse 0. */
const ZERO_MEANS: Record<string, string> = { grace: 'stop at once', 'min-ready': 'no verification window' };

/** A duration flag in ms by the one rule of src/duration.ts (a unit required; 0 only where it means something). */
export function durationFlag(flag: string, v: string | undefined, zeroMeans: string | undefined = ZERO_MEANS[flag]): number | undefined {
  if (v === undefined) return undefined;
  try {
    return durationFlagMs(`--${flag}`, v, { zeroMeans });
  } catch (err) {
    throw new UsageError(asAgentError(err).message);
  }
}

/** Restart arguments that are wrong whatever the node holds: refused before anything is sent (exit 2). */
export function checkRestartArgs(containers: string[], images: Record<string, string>): void {
  const seen = new Set<string>();
  for (const name of containers) {
    if (seen.has(name)) throw new UsageError(`container "${name}" is named twice`);
    seen.add(name);
  }
  for (const name of Object.keys(images)) {
    if (!seen.has(name)) throw new UsageError(`--image names container "${name}", which is not one of the containers to restart (${containers.join(', ')})`);
  }
}

/** An operation id as given to get, watch and cancel: the whole id or a prefix of at least 6 characters. */
export function checkOperationId(id: string): void {
  if (!/^[A-Za-z0-9-]+$/.test(id)) throw new UsageError(`operation id "${id}" is not valid: give an operation id as \`ops\` prints it (letters, digits, -)`);
  if (id.length < MIN_ID_PREFIX) throw new UsageError(`operation id "${id}" is too short: give the whole id or a prefix of at least ${MIN_ID_PREFIX} characters`);
}
