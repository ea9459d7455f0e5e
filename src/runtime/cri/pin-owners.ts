// Pins with owners, on containerd: a pin an ImagePrewarm asked for holds only while that prewarm wants it. Each
// owner puts a label of its own on every containerd record of the image (`inplace-agent.io/pinned-by.<uid>`,
// its value the owner's name) beside the CRI pinned label, and takes it off again; the CRI label goes only with
// the last owner's. An image that was pinned before any owner came (by `inplacectl pull --pin`, or by the
// runtime's own configuration) gets a marker, and keeps its CRI label when its last owner goes.
import { AgentError } from '../../errors.js';
import type { Image__Output as Record_ } from '../../gen/containerd/services/images/v1/Image.js';
import type { ContainerdClient } from '../containerd/client.js';
import type { PinnedImage, PinOwner } from '../types.js';
import { containerdNames, pinImage, PINNED_LABEL, PINNED_LABEL_VALUE, type PinImageDeps } from './pin-image.js';

/** Prefix of an owner's label on an image record; the owner's uid follows. */
export const PIN_OWNER_PREFIX = 'inplace-agent.io/pinned-by.';
/** Marker on the records of an image that was pinned before its first owner: its pin outlives its owners. */
export const PIN_KEPT_LABEL = 'inplace-agent.io/pinned-before-owners';

/** What the owned pins need: pinImage's deps, and the records' reads and listing. */
export interface PinOwnerDeps extends Omit<PinImageDeps, 'images'> {
  images: Pick<ContainerdClient, 'setImageLabel' | 'getImage' | 'listImages'>;
}

const ownersOf = (r: Record_ | undefined): [string, string][] =>
  Object.entries(r?.labels ?? {}).filter(([k]) => k.startsWith(PIN_OWNER_PREFIX)).map(([k, v]) => [k.slice(PIN_OWNER_PREFIX.length), v]);

/** The records of the image (by CRI's names for it) that exist now. */
async function recordsOf(deps: PinOwnerDeps, ref: string): Promise<{ id: string; records: Record_[] }> {
  const { image } = await deps.client.imageStatus(ref);
  if (!image) throw new AgentError('NotFound', `image ${JSON.stringify(ref)} is not present in the CRI runtime at ${deps.client.endpoint}`);
  const records: Record_[] = [];
  for (const name of containerdNames(image)) {
    const r = await deps.images.getImage(name).catch((err: unknown) => {
      if (AgentError.is(err, 'NotFound')) return undefined;
      throw err;
    });
    if (r) records.push(r);
  }
  return { id: image.id, records };
}

/** Pins the image for owner (adding its label to every record); whether CRI reports it pinned. NotFound when absent. */
export async function pinFor(deps: PinOwnerDeps, ref: string, owner: PinOwner): Promise<boolean> {
  const { id, records } = await recordsOf(deps, ref);
  const owned = records.some((r) => ownersOf(r).length > 0);
  const pinnedBefore = records.some((r) => r.labels[PINNED_LABEL] === PINNED_LABEL_VALUE);
  for (const r of records) {
    if (!owned && pinnedBefore) await deps.images.setImageLabel(r.name, PIN_KEPT_LABEL, 'true');
    await deps.images.setImageLabel(r.name, PIN_OWNER_PREFIX + owner.uid, owner.name);
  }
  return pinImage({ ...deps, images: deps.images }, id, true);
}

/** Marks the image's records as pinned by hand (or clears the mark): such a pin outlives its owners. */
export async function markKept(deps: PinOwnerDeps, ref: string, kept: boolean): Promise<void> {
  const { records } = await recordsOf(deps, ref);
  for (const r of records) if ((r.labels[PIN_KEPT_LABEL] === 'true') !== kept) await deps.images.setImageLabel(r.name, PIN_KEPT_LABEL, kept ? 'true' : '');
}

/**
 * Takes owner's label off the image's records. When no owner is left, the CRI pinned label goes too, unless
 * the image was pinned before its first owner (then only the marker goes). Nothing when the image is gone.
 */
export async function unpinFor(deps: PinOwnerDeps, ref: string, ownerUid: string): Promise<void> {
  let found;
  try {
    found = await recordsOf(deps, ref);
  } catch (err) {
    if (AgentError.is(err, 'NotFound')) return;
    throw err;
  }
  const key = PIN_OWNER_PREFIX + ownerUid;
  for (const r of found.records) if (key in r.labels) await deps.images.setImageLabel(r.name, key, '');
  const left = found.records.some((r) => ownersOf(r).some(([uid]) => uid !== ownerUid));
  if (left) return;
  const kept = found.records.some((r) => r.labels[PIN_KEPT_LABEL] === 'true');
  if (kept) {
    for (const r of found.records) if (PIN_KEPT_LABEL in r.labels) await deps.images.setImageLabel(r.name, PIN_KEPT_LABEL, '');
    return;
  }
  await pinImage({ ...deps, images: deps.images }, found.id, false);
}

/**
 * Every image whose records carry the CRI pinned label, grouped by what they point at: its names, the owners
 * found on any of its records (uid to name), and whether it was pinned before them. Size and id are filled in
 * by the caller from CRI (0 and the `sha256:` name here, when one is among the names).
 */
export async function pinnedRecords(deps: Pick<PinOwnerDeps, 'images'>): Promise<PinnedImage[]> {
  const byTarget = new Map<string, PinnedImage>();
  for (const r of await deps.images.listImages([`labels."${PINNED_LABEL}"==${PINNED_LABEL_VALUE}`])) {
    const digest = r.target?.digest ?? r.name;
    let p = byTarget.get(digest);
    if (!p) byTarget.set(digest, (p = { id: '', names: [], size: 0, owners: {}, kept: false }));
    p.names.push(r.name);
    if (r.name.startsWith('sha256:')) p.id = r.name;
    for (const [uid, name] of ownersOf(r)) p.owners[uid] = name;
    if (r.labels[PIN_KEPT_LABEL] === 'true') p.kept = true;
  }
  return [...byTarget.values()];
}
