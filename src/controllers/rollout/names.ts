// The names of what a rollout creates, by the kit's rule (kit/names.ts): fixed by what each is for (a pod and
// revision; a revision's pre-warm), a readable part cut to fit and a digest of the inputs. A name is still
// predictable: the coordinator checks ownership, never the name alone (ownership.ts).
import { digestName, MAX_NAME } from '../kit/names.js';

export { MAX_NAME } from '../kit/names.js';

/** The ContainerRestart name for a pod and revision number: ROLLOUT-POD-DIGEST-rN, cut to 253 characters. */
export function restartName(rollout: string, pod: string, revisionNumber: number): string {
  return digestName(`${rollout}-${pod}`, [rollout, pod], `-r${revisionNumber}`);
}

/** What every pre-warm name of the rollout with this uid starts with. */
export function prewarmPrefix(rolloutUid: string): string {
  return `ipr-${rolloutUid.slice(0, 8).toLowerCase()}-`;
}

/** The ImagePrewarm name of a rollout's target revision (cluster-scoped, so it carries the rollout's uid). */
export function prewarmName(rolloutUid: string, hash: string): string {
  const name = `${prewarmPrefix(rolloutUid)}${hash}`.toLowerCase();
  return name.length <= MAX_NAME ? name : digestName(name, [rolloutUid, hash]);
}
