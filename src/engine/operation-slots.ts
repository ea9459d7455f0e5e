// A bound on how many operations execute at once node-wide: the others wait (Pending) in arrival order.

/** A FIFO counting semaphore; waiters leave when their signal aborts. */
export class OperationSlots {
  private active = 0;
  private readonly waiters = new Set<{ grant: () => void }>();

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`operation slots must be a positive integer, not ${max}`);
  }

  /** Operations executing now. */
  get running(): number {
    return this.active;
  }

  /** Operations waiting for a slot. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Resolves with a release once a slot is free; rejects with the signal's reason when it aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.active < this.max && this.waiters.size === 0) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const w = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.releaser());
        },
      };
      const onAbort = () => {
        this.waiters.delete(w);
        reject(signal?.reason);
      };
      this.waiters.add(w);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      // A Set iterates in insertion order: the first waiter is the oldest.
      const next = this.waiters.values().next();
      if (next.done) {
        this.active--;
        return;
      }
      this.waiters.delete(next.value);
      next.value.grant();
    };
  }
}
