// When each operation runs: one at a time per pod, in arrival order, and at most maxParallel node-wide (the others
// wait Pending for a slot); a drain stops the waiting ones and waits for the running ones.
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { FirstReader } from './first-reads.js';
import { KeyedQueue } from './keyed-queue.js';
import { OperationSlots } from './operation-slots.js';
import type { JournaledOperations } from './operation-store.js';
import { isTerminal, type Operation } from './operation.js';
import { Paused } from './paused.js';
import type { RestartExecutor } from './restart-executor.js';

/** What the scheduler needs. */
export interface SchedulerDeps {
  executor: RestartExecutor;
  store: JournaledOperations;
  reads: FirstReader;
  clock: Clock;
  log: Logger;
  /** Operations executing at once node-wide. */
  maxParallel: number;
  /** True once the agent is draining. */
  draining(): boolean;
  /** Aborts when the agent starts draining (a wait for a slot ends). */
  drainSignal: AbortSignal;
}

/** Runs operations in their turn. */
export class OperationScheduler {
  private readonly queue = new KeyedQueue();
  private readonly slots: OperationSlots;
  private readonly running = new Set<Promise<void>>();
  /** Ids of the operations executing now (holding a slot). */
  private readonly executing = new Set<string>();
  /** Operations whose first record failed before they began to execute: they never will (see abandon). */
  private readonly abandoned = new Set<string>();

  constructor(private readonly d: SchedulerDeps) {
    this.slots = new OperationSlots(d.maxParallel);
  }

  /** Whether an operation on the pod is queued or running. */
  busy(podId: string): boolean {
    return this.queue.depth(podId) > 0;
  }

  /** Whether the operation executes now (holds a slot). */
  isExecuting(id: string): boolean {
    return this.executing.has(id);
  }

  /** Says that a scheduled operation that has not begun to execute never will (its first record failed). */
  abandon(id: string): void {
    this.abandoned.add(id);
  }

  /** Runs op in its turn; resolves when it has run (or paused), never rejecting. */
  schedule(op: Operation, resumed = false): Promise<void> {
    // An operation that waits behind another on its pod is planned again when its turn comes.
    const planAgain = resumed || this.busy(op.podId);
    const p = this.queue
      .run(op.podId, () => this.turn(op, planAgain, resumed))
      .catch((err: unknown) => {
        if (err instanceof Paused) this.d.log.info('operation paused for shutdown; it resumes at next start', { op: op.id });
        else this.d.log.error('operation crashed', { op: op.id, error: String(err) });
      })
      .finally(() => {
        this.running.delete(p);
        this.d.store.settled(op.id);
        this.d.reads.forget(op.id);
        this.prune().catch((err: unknown) => this.d.log.warn('pruning old operations failed', { error: String(err) }));
      });
    this.running.add(p);
    return p;
  }

  /** Drops the oldest ended operations beyond the retention. */
  prune(): Promise<void> {
    // A record that still owes cleanup is kept: it is what gets the cleanup done after a crash.
    return this.d.store.prune((o) => this.d.executor.pendingCleanup(o));
  }

  /**
   * Waits until no operation runs, or timeoutMs; returns the ids of those still executing (their journal records
   * resume them at the next start). Called once draining.
   */
  async idle(timeoutMs?: number): Promise<string[]> {
    const stopTimer = new AbortController();
    let timedOut = false;
    const timer = timeoutMs === undefined ? new Promise<void>(() => undefined) : this.d.clock.sleep(timeoutMs, stopTimer.signal).then(() => void (timedOut = true), () => undefined);
    while (this.running.size > 0 && !timedOut) await Promise.race([Promise.allSettled([...this.running]), timer]);
    stopTimer.abort();
    return [...this.executing];
  }

  /** op's turn on its pod: the cleanup of an ended one, or a slot and the executor's run. */
  private async turn(op: Operation, planAgain: boolean, resumed: boolean): Promise<void> {
    if (isTerminal(op.state)) return this.d.executor.cleanup(op);
    if (this.d.draining()) throw new Paused();
    // Pending until one of the node's operation slots is free (a cancel then ends it at once).
    const release = await this.slots.acquire(this.d.drainSignal).catch(() => {
      throw new Paused();
    });
    if (this.abandoned.delete(op.id)) return release();
    this.executing.add(op.id);
    try {
      if (isTerminal(op.state)) return; // cancelled while it waited
      if (this.d.draining()) throw new Paused();
      await this.d.executor.run(op, { planAgain, resumed });
    } finally {
      this.executing.delete(op.id);
      release();
    }
  }
}
