// The node's pulls as the fleet pre-warm sees them, and their implementation on the node's pull service (so
// its node-wide limit, retries, deadlines, digest checks and pinning apply to fleet pulls too).
import type { Runtime } from '../runtime/runtime.js';
import type { AuthKeyring, PullService } from '../pull/types.js';

/** How one image's pull on this node ended. */
export interface FleetPullOutcome {
  ok: boolean;
  digest: string;
  pinned: boolean;
  /** Why it failed; never contains credentials. */
  message: string;
  /** The pull service's error kind (NotFound, Unauthenticated, ...). */
  kind: string;
}

/** Pulls for the fleet pre-warm. */
export interface FleetPuller {
  /** True when the image is on the node now. */
  present(image: string): Promise<boolean>;
  /** Pulls the image when missing, reporting bytes done and total. */
  pull(image: string, opts: { keyring?: AuthKeyring; pin: boolean; signal?: AbortSignal }, onProgress: (done: number, total: number) => void): Promise<FleetPullOutcome>;
}

/** FleetPuller on the node's runtime and pull service. */
export class NodeFleetPuller implements FleetPuller {
  constructor(
    private readonly runtime: Runtime,
    private readonly pulls: PullService,
  ) {}

  async present(image: string): Promise<boolean> {
    return (await this.runtime.inspectImage(image)) !== undefined;
  }

  async pull(image: string, opts: { keyring?: AuthKeyring; pin: boolean; signal?: AbortSignal }, onProgress: (done: number, total: number) => void): Promise<FleetPullOutcome> {
    const [last] = await this.pulls.pull({ images: [image], keyring: opts.keyring, pin: opts.pin, parallel: 1 }, (e) => onProgress(e.bytesDone, e.bytesTotal), opts.signal);
    if (!last) return { ok: false, digest: '', pinned: false, message: 'the pull service reported nothing', kind: 'Internal' };
    return { ok: last.phase === 'Done', digest: last.digest, pinned: last.pinned, message: last.error, kind: last.errorKind };
  }
}
