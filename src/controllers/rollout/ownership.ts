// What a rollout treats as its own, by the kit's rule (kit/ownership.ts): every ContainerRestart and ImagePrewarm
// it creates carries a controller ownerReference with its uid; anything else, whatever its name or labels (the
// label inplace-agent.io/rollout only narrows lists and watches), is someone else's. A create's 409 is "already
// started" only for its own object asking what it would ask (else NameTaken, kit/create-or-taken.ts); an
// ImagePrewarm is deleted only when it is its own and named with the rollout's prefix.
import type { ContainerRestart } from '../container-restart/types.js';
import type { ImagePrewarm } from '../image-prewarm/types.js';
import { prewarmPrefix } from './names.js';
import { sameJson } from '../../same-json.js';
import { IPR_GROUP, IPR_KIND, IPR_VERSION, type InPlaceRollout } from './types.js';
import { notOwned, ownerKind, restartMismatch as kitRestartMismatch } from '../kit/ownership.js';

const ROLLOUT_OWNER = ownerKind(IPR_GROUP, IPR_VERSION, IPR_KIND);
/** The controller ownerReference a rollout puts on what it creates. */
export const rolloutOwnerRef = ROLLOUT_OWNER.ref;
/** Whether obj's controller ownerReference names the rollout with this uid. */
export const ownedBy = ROLLOUT_OWNER.owns;

/** Why an existing ContainerRestart is not the one the rollout wanted (undefined: it is, so the update was started). */
export function restartMismatch(rollout: InPlaceRollout, found: ContainerRestart, wanted: ContainerRestart): string | undefined {
  const why = kitRestartMismatch(ROLLOUT_OWNER, rollout, 'this rollout', found, wanted);
  if (why) return why;
  if (!sameJson(found.metadata.annotations ?? {}, { ...(found.metadata.annotations ?? {}), ...(wanted.metadata.annotations ?? {}) })) return 'it names another revision than this rollout would';
  return undefined;
}

/** Why an existing ImagePrewarm is not the one the rollout wanted (undefined: it is). */
export function prewarmMismatch(rollout: InPlaceRollout, found: ImagePrewarm, images: string[]): string | undefined {
  const why = notOwned(ROLLOUT_OWNER, rollout, found);
  if (why) return why;
  if (!sameJson([...(found.spec?.images ?? [])].sort(), [...images].sort())) return 'it pulls other images than this rollout would';
  return undefined;
}

/** Whether the rollout may delete this ImagePrewarm: its own, by owner and by name. */
export function deletablePrewarm(rollout: InPlaceRollout, pw: ImagePrewarm): boolean {
  return ownedBy(rollout.metadata.uid ?? '', pw) && pw.metadata.name.startsWith(prewarmPrefix(rollout.metadata.uid ?? ''));
}
