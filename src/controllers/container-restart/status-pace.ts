// How often a ContainerRestart's status is written while its operation runs: the claim (Pending) and the end are
// written at once; progress in between waits until STATUS_COALESCE_MS have passed since this agent's last write,
// then shows the operation as it is by then. A restart of a few seconds (a rollout's pod takes about 2 s here) so
// costs the claim and the end only, the phases its requester acts on; a long one (a pull, a slow stop) shows its
// progress every STATUS_COALESCE_MS (issue 29).
import type { Clock } from '../../clock.js';

/**
 * Least time between two status writes of a running operation's progress, ms. The status shows the operation
 * at most this late.
 */
export const STATUS_COALESCE_MS = 3000;

/** The pace of one controller's progress writes, per object key. */
export class StatusPace {
  /** Objects whose progress write waits out STATUS_COALESCE_MS (a sync is already due for them). */
  private readonly waiting = new Set<string>();
  /** When this agent last wrote each object's status (ms). */
  private readonly writtenAt = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly stopping: AbortSignal,
    /** Brings a sync of the object (called once its progress may be written). */
    private readonly enqueue: (key: string) => void,
  ) {}

  /**
   * Whether a progress write of key must wait (one was written less than STATUS_COALESCE_MS ago); if so, a sync
   * is due once it may be written.
   */
  held(key: string): boolean {
    const wait = (this.writtenAt.get(key) ?? -Infinity) + STATUS_COALESCE_MS - this.clock.now();
    if (wait <= 0) return false;
    if (this.waiting.has(key)) return true;
    this.waiting.add(key);
    this.clock
      .sleep(wait, this.stopping)
      .then(() => {
        this.waiting.delete(key);
        this.enqueue(key);
      })
      .catch(() => this.waiting.delete(key));
    return true;
  }

  /** The status of key was written now. */
  wrote(key: string): void {
    this.writtenAt.set(key, this.clock.now());
  }

  /** The object is gone. */
  forget(key: string): void {
    this.writtenAt.delete(key);
  }
}
