// Docker names are unique keys: a replacement is created under a temporary name while the old container still
// holds the real one, and the names are swapped once the old container is stopped (or put back on rollback).
// Every step reads the current name first, so a swap cut short by a crash is completed by running it again.
import type { NameSwap } from '../runtime.js';

/** The two container calls a swap needs. */
export interface Renamer {
  /** The container's current name; undefined when the container is gone. */
  nameOf(id: string): Promise<string | undefined>;
  rename(id: string, name: string): Promise<void>;
}

/** The name a replacement of the container named `name` is created under by the operation tagged `tag`. */
export function replacementName(name: string, tag: string): string | undefined {
  return name ? `${name}-inplace-${tag}` : undefined;
}

/** The name the old container steps aside to. */
function asideName(name: string, tag: string): string {
  return `${name}-replaced-${tag}`;
}

/** The old container steps aside and the replacement takes its name. */
export async function swapNames(r: Renamer, s: NameSwap): Promise<void> {
  if (!s.name) return;
  // Both names are read at once (this runs between the stop and the start: one round trip, not two); renaming
  // the old container does not change the replacement's name.
  const [oldName, newName] = await Promise.all([r.nameOf(s.oldId), s.newId ? r.nameOf(s.newId) : undefined]);
  const aside = asideName(s.name, s.tag);
  if (oldName !== undefined && oldName !== aside) await r.rename(s.oldId, aside);
  if (s.newId && newName !== undefined && newName !== s.name) await r.rename(s.newId, s.name);
}

/** The replacement goes back to its temporary name and the old container gets its name back. */
export async function restoreNames(r: Renamer, s: NameSwap): Promise<void> {
  if (!s.name) return;
  if (s.newId) await renameIfNeeded(r, s.newId, replacementName(s.name, s.tag)!);
  await renameIfNeeded(r, s.oldId, s.name);
}

async function renameIfNeeded(r: Renamer, id: string, name: string): Promise<void> {
  const cur = await r.nameOf(id);
  if (cur === undefined || cur === name) return;
  await r.rename(id, name);
}
