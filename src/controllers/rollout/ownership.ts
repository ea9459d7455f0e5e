// What a rollout treats as its own. Every ContainerRestart and ImagePrewarm it creates carries a controller
// ownerReference with its uid; anything else, whatever its name or labels, is someone else's. The label
// inplace-agent.io/rollout still narrows lists and watches, but a label is written by whoever may patch the
// object, so it decides nothing:
//
//   count a ContainerRestart as the rollout's       controller ownerReference with the rollout's uid
//   take a create's 409 as "already started"         the object found is the rollout's and asks what it would ask
//   delete an ImagePrewarm                            the rollout's, and named with the rollout's prefix
//
// An ownerReference is written by whoever creates the object, so one may be forged: a forged one that asks
// something else is a name taken (the rollout fails, naming it), and deletion also needs the rollout's name
// prefix, which another's ImagePrewarm does not have.
import type { ContainerRestart } from '../container-restart/types.js';
import type { ImagePrewarm } from '../image-prewarm/types.js';
import { prewarmPrefix } from './names.js';
import { sameJson } from '../../same-json.js';
import { IPR_GROUP, IPR_KIND, IPR_VERSION, type InPlaceRollout } from './types.js';

/** An ownerReference as objects carry it. */
export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Any object: its metadata is read for owners. */
type Owned = { metadata?: unknown };

/** The controller ownerReference a rollout puts on what it creates. */
export function rolloutOwnerRef(rollout: InPlaceRollout): OwnerRef {
  return { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: IPR_KIND, name: rollout.metadata.name, uid: rollout.metadata.uid ?? '', controller: true };
}

/** Whether obj's controller ownerReference names the rollout with this uid. */
export function ownedBy(rolloutUid: string, obj: Owned): boolean {
  if (!rolloutUid) return false;
  const refs = (obj.metadata as { ownerReferences?: OwnerRef[] } | undefined)?.ownerReferences ?? [];
  const ctl = refs.find((r) => r.controller === true);
  return ctl?.uid === rolloutUid && ctl.kind === IPR_KIND && ctl.apiVersion.startsWith(`${IPR_GROUP}/`);
}

/** Why an existing ContainerRestart is not the one the rollout wanted (undefined: it is, so the update was started). */
export function restartMismatch(rollout: InPlaceRollout, found: ContainerRestart, wanted: ContainerRestart): string | undefined {
  if (!ownedBy(rollout.metadata.uid ?? '', found)) return `it has no controller ownerReference to InPlaceRollout ${rollout.metadata.name} (uid ${rollout.metadata.uid ?? ''})`;
  if (found.spec?.podName !== wanted.spec.podName || !sameJson(found.spec?.containers, wanted.spec.containers)) return 'it asks for another pod or other images than this rollout would';
  if (!sameJson(found.metadata.annotations ?? {}, { ...(found.metadata.annotations ?? {}), ...(wanted.metadata.annotations ?? {}) })) return 'it names another revision than this rollout would';
  return undefined;
}

/** Why an existing ImagePrewarm is not the one the rollout wanted (undefined: it is). */
export function prewarmMismatch(rollout: InPlaceRollout, found: ImagePrewarm, images: string[]): string | undefined {
  if (!ownedBy(rollout.metadata.uid ?? '', found)) return `it has no controller ownerReference to InPlaceRollout ${rollout.metadata.name} (uid ${rollout.metadata.uid ?? ''})`;
  if (!sameJson([...(found.spec?.images ?? [])].sort(), [...images].sort())) return 'it pulls other images than this rollout would';
  return undefined;
}

/** Whether the rollout may delete this ImagePrewarm: its own, by owner and by name. */
export function deletablePrewarm(rollout: InPlaceRollout, pw: ImagePrewarm): boolean {
  return ownedBy(rollout.metadata.uid ?? '', pw) && pw.metadata.name.startsWith(prewarmPrefix(rollout.metadata.uid ?? ''));
}
