// What the restart engine needs from the image service: make sure an image is in the runtime's store.
import type { Runtime } from '../runtime/runtime.js';
import type { PullProgress } from '../runtime/types.js';

/** Result of ensuring an image is present. */
export interface EnsuredImage {
  ref: string;
  id: string;
  digest: string;
  /** False when the image was already present. */
  pulled: boolean;
}

/** Makes images present in the runtime's store (IfNotPresent semantics). */
export interface ImagePuller {
  ensure(ref: string, opts?: { signal?: AbortSignal; onProgress?: (p: PullProgress) => void }): Promise<EnsuredImage>;
}

/** The simplest puller: inspect, then pull straight from the runtime when missing. */
export class DirectPuller implements ImagePuller {
  constructor(private readonly runtime: Runtime) {}

  async ensure(ref: string, opts: { signal?: AbortSignal; onProgress?: (p: PullProgress) => void } = {}): Promise<EnsuredImage> {
    const have = await this.runtime.inspectImage(ref);
    if (have) return { ref, id: have.id, digest: have.repoDigests[0] ?? '', pulled: false };
    const got = await this.runtime.pullImage(ref, { signal: opts.signal, onProgress: opts.onProgress });
    return { ref, id: got.id, digest: got.digest, pulled: true };
  }
}
