// What a SidecarSet treats as its own, by the kit's rule (kit/ownership.ts). Every ContainerRestart and
// ImagePrewarm it creates carries a controller ownerReference with its uid (the garbage collector deletes them
// with it: the owner is cluster-scoped, so namespaced dependents may name it); anything else, whatever its name or
// labels, is someone else's. The labels (SIDECARSET_LABEL, IMAGES_LABEL) narrow lists and watches and nothing more:
//
//   count a ContainerRestart as the SidecarSet's   its controller ownerReference names the SidecarSet's uid
//   take a create's 409 as "already started"        the object found is its own and asks what it would ask
//                                                   (else NameTaken in the status, naming the object)
//   delete an ImagePrewarm                           its own, and named with its prefix (prewarm.ts)
//   delete a ContainerRestart                        never by the coordinator: by the garbage collector, as its owner's
import type { ContainerRestart } from '../container-restart/types.js';
import { notOwned, ownerKind, restartMismatch as kitRestartMismatch } from '../kit/ownership.js';
import { SCS_GROUP, SCS_KIND, SCS_VERSION, type SidecarSet } from './types.js';

/** Label on each ContainerRestart and ImagePrewarm a SidecarSet creates: the SidecarSet's uid (narrows lists only). */
export const SIDECARSET_LABEL = 'inplace-agent.io/sidecarset';
/** Label on each ContainerRestart a SidecarSet creates: the key of the image set it upgrades to (plan.ts imagesKey). */
export const IMAGES_LABEL = 'inplace-agent.io/sidecarset-images';

const SET_OWNER = ownerKind(SCS_GROUP, SCS_VERSION, SCS_KIND);
/** Why obj is not the SidecarSet's own (undefined: it is). */
export const notSetOwned = (set: SidecarSet, obj: { metadata?: unknown }) => notOwned(SET_OWNER, set, obj);
/** The controller ownerReference a SidecarSet puts on what it creates. */
export const setOwnerRef = SET_OWNER.ref;
/** Whether the SidecarSet with this uid is the controller owner of obj. */
export const ownedBySet = SET_OWNER.owns;

/** Why an existing ContainerRestart is not the one the SidecarSet wanted (undefined: it is, so the upgrade was started). */
export function restartMismatch(set: SidecarSet, found: ContainerRestart, wanted: ContainerRestart): string | undefined {
  const why = kitRestartMismatch(SET_OWNER, set, 'this SidecarSet', found, wanted);
  if (why) return why;
  if (found.metadata.labels?.[IMAGES_LABEL] !== wanted.metadata.labels?.[IMAGES_LABEL]) return 'it names another image set than this SidecarSet would';
  return undefined;
}
