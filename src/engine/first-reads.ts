// The reads a restart starts with: each old container (its state, and its creation config where the strategy
// needs it; a state alone comes from the plan's own list) and the pod's IP. A new operation's reads begin once it
// is planned, while it is confirmed and recorded, so that they are off the caller's path; they only read, so
// nothing is touched before a record is on disk.
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ContainerDetail, ContainerState } from '../runtime/types.js';
import type { ContainerTarget, Operation } from './operation.js';
import { whenAvailable, type WhenAvailable } from './paused.js';
import { strategyNamed, type RestartStrategy } from './restart-strategy.js';
import type { StepTrace } from './step-trace.js';

/** An old container as read before it is touched: its state, and its creation config when its strategy needs it. */
export interface OldRead {
  state: ContainerState | 'gone';
  detail?: ContainerDetail;
}

/** The reads an operation starts with, and when they began (epoch ms). */
export interface FirstReads {
  at: number;
  olds: Map<string, Promise<OldRead>>;
  podIp: Promise<string>;
}

/** What the reads need (the engine's own runtime, clock and drain; the executor's strategies). */
export interface FirstReadDeps {
  runtime: Runtime;
  clock: Clock;
  log: Logger;
  /** The strategies, by the name a planned container carries: whether each needs the old container's config. */
  strategies: readonly RestartStrategy[];
  /** True once the agent is draining (a read waiting for the runtime then pauses the operation). */
  draining(): boolean;
  /** Aborts when the agent starts draining. */
  drainSignal?: AbortSignal;
  /** Where each read is marked in the operation's step trace. */
  trace?: StepTrace;
}

/** Begins, keeps and hands over the first reads of operations. */
export class FirstReader {
  /** The first reads of new operations, begun as they were planned (see prefetch). */
  private readonly early = new Map<string, FirstReads>();
  /** A read that waits for a runtime briefly away; a drain meanwhile pauses the operation. */
  private readonly whenAvailable: WhenAvailable;

  constructor(private readonly d: FirstReadDeps) {
    this.whenAvailable = whenAvailable(d);
  }

  /**
   * Begins the first reads of a new operation as it is planned; its run takes them. listed: the old containers'
   * states as the plan's list (made just before) gave them, which is all a strategy that needs no creation config
   * reads: no status call is made for those.
   */
  prefetch(op: Operation, listed?: Map<string, ContainerState>): void {
    this.early.set(op.id, this.begin(op, Date.parse(op.createdAt) + op.request.timeoutMs, listed));
  }

  /** Forgets the first reads of an operation that will not run (its record could not be written). */
  forget(id: string): void {
    this.early.delete(id);
  }

  /** The reads op starts with: those prefetch began (unless it is planned again), else begun now. */
  take(op: Operation, deadline: number, planAgain: boolean): FirstReads {
    const early = this.early.get(op.id);
    this.early.delete(op.id);
    return early && !planAgain ? early : this.begin(op, deadline);
  }

  private begin(op: Operation, deadline: number, listed?: Map<string, ContainerState>): FirstReads {
    const olds = new Map(
      op.containers.map((t) => {
        const state = this.needsOldConfig(t) ? undefined : listed?.get(t.oldId);
        if (state !== undefined) this.note(op, `state of ${t.name} listed`);
        const p = state !== undefined ? Promise.resolve<OldRead>({ state }) : this.readOld(op, t, deadline);
        p.catch(() => undefined); // awaited (and its error seen) only if that container is reached
        return [t.oldId, p];
      }),
    );
    const podIp = op.podIp ? Promise.resolve(op.podIp) : this.d.runtime.getPod(op.podId).then((p) => p.ip, () => '');
    return { at: this.d.clock.now(), olds, podIp };
  }

  /**
   * The old container's state, with its creation config when its strategy needs that (standalone); a strategy
   * that does not (the kubelet's) costs a plain status call.
   */
  async readOld(op: Operation, t: ContainerTarget, until: number): Promise<OldRead> {
    if (!this.needsOldConfig(t)) {
      try {
        const state = await this.whenAvailable(`read the state of the container "${t.name}"`, until, () => this.d.runtime.containerState(t.oldId));
        this.note(op, `state of ${t.name} read`);
        return { state };
      } catch (err) {
        if (AgentError.is(err, 'NotFound')) return { state: 'gone' };
        throw err;
      }
    }
    const detail = await this.inspectOld(t, until);
    this.note(op, `inspected ${t.name}`);
    return detail ? { state: detail.state, detail } : { state: 'gone' };
  }

  /** The old container with its creation config; undefined when it is gone. */
  private async inspectOld(t: ContainerTarget, until: number): Promise<ContainerDetail | undefined> {
    try {
      return await this.whenAvailable(`read the container "${t.name}"`, until, () => this.d.runtime.inspectContainer(t.oldId));
    } catch (err) {
      if (AgentError.is(err, 'NotFound')) return undefined;
      throw err;
    }
  }

  /** Whether the container's strategy needs the old container's creation config, or only its state. */
  private needsOldConfig(t: ContainerTarget): boolean {
    return strategyNamed(this.d.strategies, t)?.needsOldConfig !== false;
  }

  private note(op: Operation, what: string): void {
    this.d.trace?.mark(op.id, what);
  }
}
