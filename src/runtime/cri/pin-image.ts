// Pinning an image on containerd: CRI has no call for it, so the label the CRI plugin reads
// (`io.cri-containerd.pinned=pinned`) is set on, or removed from, every containerd image record of the image
// through containerd's images service; the result is what CRI then reports as Image.pinned, which is what the
// kubelet's image GC goes by. Releases that ignore the label (containerd 1.6.20 among them, see
// pinned-label-support.ts) still get it, for the containerd they are upgraded to, and report false.
import type { Clock } from '../../clock.js';
import { AgentError } from '../../errors.js';
import type { Image__Output } from '../../gen/runtime/v1/Image.js';
import type { CriClient } from './client.js';
import type { ContainerdClient } from '../containerd/client.js';
import type { PinnedLabelSupport } from './pinned-label-support.js';

/** The image label containerd's CRI plugin reads as "pinned" when its value is PINNED_LABEL_VALUE. */
export const PINNED_LABEL = 'io.cri-containerd.pinned';
/** The value of PINNED_LABEL that marks an image pinned. */
export const PINNED_LABEL_VALUE = 'pinned';

/** What pinImage works with. */
export interface PinImageDeps {
  client: CriClient;
  images: Pick<ContainerdClient, 'setImageLabel'>;
  /** How the runtime treats the label; resolved once per runtime. */
  support: () => Promise<PinnedLabelSupport>;
  clock: Clock;
  /** How long to wait for CRI to report the new state where it picks up label changes, ms. */
  settleMs: number;
  /** Interval of ImageStatus reads while waiting, ms. */
  pollMs: number;
}

/**
 * The containerd image record names of a CRI image: CRI's containerd keeps one record per repo tag, per
 * repo digest and one named by the image id.
 */
export function containerdNames(image: Pick<Image__Output, 'id' | 'repoTags' | 'repoDigests'>): string[] {
  return [...new Set([...image.repoTags, ...image.repoDigests, image.id].filter((n) => n !== ''))];
}

/**
 * Sets (pinned) or removes the pinned label on every record of the image ref names, then returns whether CRI
 * reports the image pinned. Where the runtime picks up label changes (or might) it waits up to settleMs for
 * the report to follow; elsewhere it reads it once. NotFound when the image is not present.
 */
export async function pinImage(deps: PinImageDeps, ref: string, pinned: boolean): Promise<boolean> {
  const { image } = await deps.client.imageStatus(ref);
  if (!image) throw new AgentError('NotFound', `image ${JSON.stringify(ref)} is not present in the CRI runtime at ${deps.client.endpoint}`);
  let labelled = 0;
  for (const name of containerdNames(image)) {
    try {
      await deps.images.setImageLabel(name, PINNED_LABEL, pinned ? PINNED_LABEL_VALUE : '');
      labelled++;
    } catch (err) {
      // A record removed since ImageStatus (an untag, a concurrent RemoveImage) has nothing left to label.
      if (!AgentError.is(err, 'NotFound')) throw err;
    }
  }
  if (labelled === 0) throw new AgentError('NotFound', `image ${JSON.stringify(ref)}: containerd has no image record under any of its names`);

  const support = await deps.support();
  const wait = support === 'live' || support === 'unknown';
  const deadline = deps.clock.now() + (wait ? deps.settleMs : 0);
  for (;;) {
    const reported = (await deps.client.imageStatus(image.id)).image?.pinned ?? false;
    if (reported === pinned || deps.clock.now() >= deadline) return reported;
    await deps.clock.sleep(deps.pollMs);
  }
}
