// Runs tasks one at a time per key, in submission order; different keys run concurrently.

/** A FIFO lock per key (a pod id). */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly waiting = new Map<string, number>();

  /** Runs task after every earlier task of the same key has settled. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    this.waiting.set(key, (this.waiting.get(key) ?? 0) + 1);
    const result = prev.then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      const n = (this.waiting.get(key) ?? 1) - 1;
      if (n <= 0) {
        this.waiting.delete(key);
        if (this.tails.get(key) === tail) this.tails.delete(key);
      } else this.waiting.set(key, n);
    });
    return result;
  }

  /** Number of tasks queued or running for a key. */
  depth(key: string): number {
    return this.waiting.get(key) ?? 0;
  }
}
