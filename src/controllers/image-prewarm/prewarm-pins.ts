// The pins ImagePrewarms ask for on this node, with limits: each pin is made on behalf of its prewarm (the
// runtime keeps one owner label per prewarm, see runtime/cri/pin-owners.ts), is refused when it would take the
// node's pinned bytes over --max-pinned-bytes, and is taken off once its prewarm is gone, no longer pins, or no
// longer names the image. An image two prewarms pin stays pinned until both let go; a pin made by hand
// (`inplacectl pull --pin`) is no prewarm's and stays.
import { asAgentError } from '../../errors.js';
import { formatBytes } from '../../bytes.js';
import { parseImageRef } from '../../image-ref.js';
import type { Logger } from '../../log.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { PinOwner } from '../../runtime/types.js';
import type { ImagePrewarm } from './types.js';

/** How a prewarm's pin of one image went. */
export interface PrewarmPinResult {
  /** The runtime reports the image pinned. */
  pinned: boolean;
  /** Why the pin was refused (the cap), for the record; undefined when it was not. */
  refused?: string;
}

/** The runtime's calls the prewarm pins use. */
export type PinRuntime = Pick<Runtime, 'pinFor' | 'unpinFor' | 'pinnedImages' | 'inspectImage'>;

/** An image reference as the runtime names its records: normalized, `:latest` when it names no tag or digest. */
function recordName(ref: string): string | undefined {
  try {
    const r = parseImageRef(ref);
    return r.tag || r.digest ? r.normalized : `${r.normalized}:latest`;
  } catch {
    return undefined; // an id (`sha256:...`) or a name that is no reference
  }
}

/** Pins for ImagePrewarms on one node, capped, and undone with their prewarm. */
export class PrewarmPins {
  /** Pins and sweeps run one at a time, so that two pins cannot both pass the cap. */
  private chain: Promise<unknown> = Promise.resolve();
  /** What the last sweep kept (prewarm uid to its images): the next sweep runs only when this changes. */
  private lastWanted: string | undefined;

  /** maxBytes: the most bytes of pinned images the node may hold (0: no cap). */
  constructor(
    private readonly runtime: PinRuntime,
    private readonly maxBytes: number,
    private readonly log: Logger,
  ) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Pins image for owner, unless its bytes would take the node's pinned images over the cap. */
  pin(owner: PinOwner, image: string): Promise<PrewarmPinResult> {
    return this.serial(async () => {
      if (!this.runtime.pinFor) return { pinned: false };
      if (this.maxBytes > 0 && this.runtime.pinnedImages) {
        const img = await this.runtime.inspectImage(image);
        const pinned = await this.runtime.pinnedImages();
        if (img && !pinned.some((p) => p.id === img.id)) {
          const total = pinned.reduce((sum, p) => sum + p.size, 0);
          if (total + img.size > this.maxBytes) {
            return {
              pinned: false,
              refused: `not pinned: ${image} (${formatBytes(img.size)}) would take the images pinned on this node to ${formatBytes(total + img.size)}, over its --max-pinned-bytes of ${formatBytes(this.maxBytes)}; it is pulled, and the kubelet's image GC may remove it`,
            };
          }
        }
      }
      const pinned = await this.runtime.pinFor(image, owner);
      this.lastWanted = undefined; // its prewarm may have gone meanwhile: the next sweep looks again
      return { pinned };
    });
  }

  /**
   * Takes off every prewarm pin that no prewarm of the list wants any more: its prewarm is gone, no longer has
   * `pin: true`, or no longer names the image. Runs only when what the prewarms want changed since the last one.
   */
  sweep(prewarms: ImagePrewarm[]): Promise<void> {
    const wanted = new Map<string, Set<string>>();
    for (const pw of prewarms) {
      if (!pw.spec.pin || !pw.metadata.uid) continue;
      wanted.set(pw.metadata.uid, new Set(pw.spec.images.map(recordName).filter((n): n is string => !!n)));
    }
    const key = JSON.stringify([...wanted].map(([uid, imgs]) => [uid, [...imgs].sort()]).sort());
    if (key === this.lastWanted || !this.runtime.pinnedImages || !this.runtime.unpinFor) return Promise.resolve();
    return this.serial(async () => {
      try {
        for (const p of await this.runtime.pinnedImages!()) {
          for (const [uid, name] of Object.entries(p.owners)) {
            const imgs = wanted.get(uid);
            if (imgs && p.names.some((n) => imgs.has(n))) continue;
            await this.runtime.unpinFor!(p.id || p.names[0], uid);
            this.log.info('image pin released: its ImagePrewarm no longer pins it', { prewarm: name, image: p.names.find((n) => !n.startsWith('sha256:')) ?? p.id });
          }
        }
        this.lastWanted = key;
      } catch (err) {
        this.log.warn('prewarm pins not swept; trying again at the next change', { error: asAgentError(err).message });
      }
    });
  }
}
