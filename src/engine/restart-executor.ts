// Runs a planned restart operation: the loop around the strategies. It plans a queued operation again, pulls
// the new images, hands each container in turn to the strategy it was planned with (strategy.advance), and
// finishes the operation. Every step is written to the journal before the side effect it announces, and every
// step is safe to run again, so the same code both runs a new operation and resumes one that an agent killed
// mid-way left behind (see the state machine in operation.ts).
import { AgentError, asAgentError } from '../errors.js';
import type { ContainerDetail } from '../runtime/types.js';
import type { ExecutorDeps } from './executor-deps.js';
import { FirstReader, type OldRead } from './first-reads.js';
import { pullImages } from './image-pulls.js';
import { canTransition, isTerminal, type ContainerStep, type ContainerTarget, type Operation, type OperationState } from './operation.js';
import { Paused, Unrecorded, pausable } from './paused.js';
import { podReadableAtStart, readPodAfter } from './pod-after.js';
import { Reasons } from './reasons.js';
import type { RestartStrategy, StepContext } from './restart-strategy.js';
import { isTransient } from './runtime-wait.js';

export { Reasons, Paused, Unrecorded };
export type { ExecutorDeps };

/** A read of the old containers older than this is taken again before they are touched. */
const STALE_READ_MS = 1000;

/** Runs one operation to a terminal state (or to a safe point when draining). */
export class RestartExecutor {
  /** Operations whose verification a cancel cut short (they end Cancelled, never Succeeded). */
  private readonly cutShort = new Set<string>();

  /** The first reads of each operation (old containers, pod IP); the engine begins a new one's early (prefetch). */
  readonly reads: FirstReader;

  constructor(private readonly d: ExecutorDeps) {
    this.reads = new FirstReader({
      runtime: d.runtime,
      clock: d.clock,
      needsOldConfig: (t) => this.strategyOf(t, false).needsOldConfig !== false,
      note: (op, what) => this.note(op, what),
      whenAvailable: (what, until, call) => this.whenAvailable(what, until, call),
    });
  }

  /** Operations read back from the journal by this agent (see StepContext.resumed). */
  private readonly resumed = new Set<string>();

  /** Per operation: its pod's read after the restart, begun as its last replacement starts (see podReadableAtStart). */
  private readonly podAfter = new Map<string, Promise<Operation['podAfter']>>();

  /**
   * Drives op from whatever state its journal record holds to the end (replan when it waited in the queue;
   * resumed when it was read back from the journal), then does what its strategies left until after it was
   * reported (cleanup).
   */
  async run(op: Operation, opts: { replan?: boolean; resumed?: boolean } = {}): Promise<void> {
    if (opts.resumed) this.resumed.add(op.id);
    this.note(op, 'running');
    try {
      await this.drive(op, opts);
      if (isTerminal(op.state)) await this.cleanup(op);
    } catch (err) {
      if (!(err instanceof Unrecorded)) throw err;
      await this.abandon(op);
    } finally {
      this.resumed.delete(op.id);
      this.d.trace?.end(op.id, { pod: op.podName, state: op.state });
    }
  }

  /**
   * Undoes what an operation whose first record could not be written did before its first journal write: the
   * replacements it created (inert: nothing is stopped before a step is on record). Its caller hears the
   * journal's error once this is done (Engine.record).
   */
  private async abandon(op: Operation): Promise<void> {
    for (const t of op.containers) {
      if (!t.newId) continue;
      await this.d.runtime.removeContainer(t.newId).catch((err: unknown) => {
        if (!AgentError.is(err, 'NotFound')) this.d.log.warn('cannot remove the replacement of an operation that was not recorded', { op: op.id, container: t.name, id: t.newId, error: asAgentError(err).message });
      });
    }
    this.note(op, 'abandoned: not recorded');
  }

  /** Whether an ended operation still owes work to its containers (see RestartStrategy.pending). */
  pendingCleanup(op: Operation): boolean {
    return op.containers.some((t) => this.strategyOf(t, false).pending?.(t) === true);
  }

  /**
   * Does the work an ended operation's strategies left until after it was reported (the old containers'
   * removal). A drain or a failure leaves it in the journal record, for the next start.
   */
  async cleanup(op: Operation): Promise<void> {
    for (const t of op.containers) {
      const s = this.strategyOf(t, false);
      if (!s.cleanup || !s.pending?.(t)) continue;
      try {
        await s.cleanup(op, t, this.stepContext(op, t, Date.parse(op.createdAt) + op.request.timeoutMs, undefined));
      } catch (err) {
        if (err instanceof Paused) return;
        this.d.log.error('cleanup after the operation failed; it is tried again at the next start', { op: op.id, container: t.name, step: t.step, error: asAgentError(err).message });
      }
    }
  }

  private async drive(op: Operation, opts: { replan?: boolean }): Promise<void> {
    const deadline = Date.parse(op.createdAt) + op.request.timeoutMs;
    const replan = this.d.replan;
    if (opts.replan && op.state === 'Pending' && replan) {
      try {
        // A runtime that is briefly away says nothing about the pod: it is waited for, until the deadline.
        await this.whenAvailable('plan the operation again', deadline, () => replan(op));
      } catch (err) {
        if (err instanceof Paused) throw err;
        const e = asAgentError(err);
        if (isTransient(e)) await this.finish(op, 'Failed', `${e.message}; nothing was changed`, e.kind, Reasons.Deadline);
        else await this.finish(op, 'Failed', `the pod changed while the operation waited: ${e.message}; nothing was changed`, e.kind, Reasons.PodChanged);
        return;
      }
    }
    // The old containers are read (their creation configs, for strategies that need them) and the pod's IP
    // while images are checked or pulled; a new operation's reads began as it was planned.
    const first = this.reads.take(op, deadline, opts.replan === true);
    const podIp = first.podIp.then((ip) => (op.podIp = ip));
    try {
      if (op.state === 'Pending' || op.state === 'Pulling') {
        this.safePoint(op, deadline);
        this.setState(op, 'Pulling');
        await pullImages(op, deadline, {
          ...this.d,
          signals: [this.d.drainSignal, this.d.cancelSignal?.(op)].filter((x): x is AbortSignal => x !== undefined),
          pulling: (t, result) => this.strategyOf(t).pulling?.(op, t, result),
          // A download may take minutes: the operation is journaled as it begins (an operation admitted without a
          // Pending record has its first record then), so that a crash meanwhile resumes it. Not awaited: the next
          // write of the record comes after it, and a write that fails is fatal (see EngineDeps.onFatal).
          downloading: () => void this.save(op, true, 'journaled as its image downloads').catch(() => undefined),
        });
        this.note(op, 'images present');
        this.safePoint(op, deadline);
        this.setState(op, 'Recreating');
      }
      for (const t of op.containers) {
        if (t.step === 'Done') continue;
        if (t.step !== 'RolledBack' && t.step !== 'Failed' && (await this.advance(op, t, deadline, first.olds.get(t.oldId) ?? this.reads.readOld(op, t, deadline), first.at))) continue;
        // This container failed (and was rolled back where it had been touched): the operation ends here.
        const discarded = t.step === 'RolledBack' && t.reason === Reasons.Cancelled;
        await this.finish(op, discarded ? 'RolledBack' : 'Failed', `${t.error ?? 'replacement failed'}${this.replacedNote(op)}`, undefined, t.reason ?? Reasons.ReplacementFailed);
        return;
      }
      if (this.cutShort.delete(op.id)) {
        const kept = this.replaced(op).join(', ');
        await this.finish(op, 'Cancelled', `operation ${op.id} was cancelled while verifying; the running replacements were kept without the full min-ready window: ${kept}`, 'Cancelled', Reasons.Cancelled);
        return;
      }
      await podIp;
      op.podAfter = await (this.podAfter.get(op.id) ?? readPodAfter(this.d.runtime, op));
      this.note(op, 'pod read after');
      await this.finish(op, 'Succeeded');
    } catch (err) {
      if (err instanceof Paused || err instanceof Unrecorded) throw err;
      const e = asAgentError(err);
      // Stopped at a safe point: containers already replaced stay replaced, the others were not touched.
      await this.finish(op, e.kind === 'Cancelled' ? 'Cancelled' : 'Failed', e.message + this.replacedNote(op), e.kind, e.reason);
    } finally {
      this.cutShort.delete(op.id);
      this.podAfter.delete(op.id);
    }
  }

  /**
   * Hands one container to its strategy, from its journaled step. At Waiting (nothing touched yet) the old
   * container is checked here, once for every strategy: one that no longer runs fails the container untouched.
   */
  private async advance(op: Operation, t: ContainerTarget, deadline: number, first: Promise<OldRead>, readAt: number): Promise<boolean> {
    const strategy = this.strategyOf(t);
    let old: ContainerDetail | undefined;
    if (t.step === 'Waiting') {
      this.safePoint(op, deadline);
      // A read from before a long pull may be stale (the container could have been stopped meanwhile).
      const read = this.d.clock.now() - readAt <= STALE_READ_MS ? await first : await this.reads.readOld(op, t, deadline);
      if (read.state !== 'running') {
        t.reason = Reasons.Interrupted;
        t.error = `${Reasons.Interrupted}: container "${t.name}" (${t.oldId.slice(0, 12)}) is ${read.state}; it was not touched`;
        await this.step(op, t, 'Failed');
        return false;
      }
      old = read.detail;
    } else {
      // Resuming mid-way: a failed read must not end the operation with the container down. The steps from
      // here need the old container's config only to roll back, and find it again then.
      old = await first.then(
        (r) => r.detail,
        (err: unknown) => {
          this.d.log.warn('cannot read the old container while resuming; going on without it', { op: op.id, container: t.name, error: asAgentError(err).message });
          return undefined;
        },
      );
    }
    return strategy.advance(op, t, this.stepContext(op, t, deadline, old));
  }

  /** The containers already replaced: Done, or verified with cleanup pending. */
  private replaced(op: Operation): string[] {
    return op.containers.filter((c) => c.step === 'Done' || this.strategyOf(c, false).pending?.(c) === true).map((c) => c.name);
  }

  /** What a failed or cancelled operation's message adds: which containers were already replaced. */
  private replacedNote(op: Operation): string {
    const done = this.replaced(op);
    return done.length > 0 ? `; already replaced: ${done.join(', ')}; the others were not touched` : '';
  }

  private safePoint(op: Operation, deadline: number): void {
    if (op.cancelRequested) throw new AgentError('Cancelled', `operation ${op.id} was cancelled`, { reason: Reasons.Cancelled });
    if (this.d.draining()) throw new Paused();
    if (this.d.clock.now() > deadline) throw new AgentError('DeadlineExceeded', `operation ${op.id} ran out of time (timeout ${op.request.timeoutMs / 1000}s)`, { reason: Reasons.Deadline });
  }

  /** Moves the operation to a non-terminal state; published now, journaled with the next step. */
  private setState(op: Operation, state: OperationState): void {
    if (op.state === state) return;
    this.checkTransition(op, state);
    op.state = state;
    op.updatedAt = this.nowIso();
    this.d.publish(op);
  }

  private checkTransition(op: Operation, to: OperationState): void {
    if (!canTransition(op.state, to)) throw new AgentError('Internal', `operation ${op.id}: illegal transition ${op.state} -> ${to}`);
  }

  /** Enters a step and journals it before its side effect (see StepContext.step). */
  private async step(op: Operation, t: ContainerTarget, step: ContainerStep, sync = true): Promise<void> {
    this.record(t, step, op);
    await this.save(op, sync, `${t.name}: ${step} journaled`);
    this.d.afterStep?.(op, t, step);
  }

  /**
   * Enters a step that records a finished side effect. It is published at once and reaches the journal with
   * the next intent: recovery from the previous intent repeats an idempotent call, so nothing is lost.
   */
  private mark(op: Operation, t: ContainerTarget, step: ContainerStep): void {
    this.record(t, step, op);
    op.updatedAt = this.nowIso();
    this.d.publish(op);
    this.d.afterStep?.(op, t, step);
  }

  private record(t: ContainerTarget, step: ContainerStep, op?: Operation): void {
    if (op) this.note(op, `${t.name}: ${step}`);
    t.step = step;
    t.steps.push({ step, at: this.nowIso() });
    if (op && (step === 'Starting' || step === 'Verifying')) this.readPodEarly(op, t);
  }

  /**
   * Begins the pod's read after the restart as its last container's replacement is started (standalone:
   * Starting; kubelet: Verifying, the old instance stopped or the spec patched), so that the report does not
   * wait for it (see podReadableAtStart).
   */
  private readPodEarly(op: Operation, t: ContainerTarget): void {
    if (this.podAfter.has(op.id) || !podReadableAtStart(op, t)) return;
    const read = readPodAfter(this.d.runtime, op);
    read.catch(() => undefined); // readPodAfter says undefined on failure; this only guards an unused promise
    this.podAfter.set(op.id, read);
  }

  private async save(op: Operation, sync = true, what = `${op.state} journaled`): Promise<void> {
    const first = this.d.firstRecord?.(op);
    if (first) await first.catch((err: unknown) => Promise.reject(new Unrecorded(err)));
    op.updatedAt = this.nowIso();
    await this.d.save(op, sync);
    this.note(op, `${what}${sync ? ' (directory synced)' : ''}`);
  }

  private note(op: Operation, what: string): void {
    this.d.trace?.mark(op.id, what);
  }

  private nowIso(): string {
    return new Date(this.d.clock.now()).toISOString();
  }

  private async finish(op: Operation, state: OperationState, error?: string, kind?: string, reason?: string): Promise<void> {
    if (isTerminal(op.state)) return;
    this.checkTransition(op, state);
    op.state = state;
    if (error) op.error = error;
    if (kind) op.errorKind = kind;
    if (reason) op.reason = reason;
    op.finishedAt = this.nowIso();
    // Success is told before it is journaled: nothing on the caller's path follows the verification. Were the
    // agent to die before the write, the record (every container verified) ends the operation the same way.
    if (state === 'Succeeded') this.d.publish(op);
    this.note(op, `reported ${state}`);
    await this.save(op);
    this.d.log.info('operation finished', { op: op.id, pod: op.podName, state, reason, error });
    for (const s of this.d.strategies) {
      if (!s.finished || !op.containers.some((c) => (c.strategy ?? 'standalone') === s.name)) continue;
      await s.finished(op).catch((err: unknown) => this.d.log.warn('reporting the end of an operation failed', { op: op.id, strategy: s.name, error: asAgentError(err).message }));
      this.note(op, `${s.name}: end reported`);
    }
  }

  /** The strategy a container was planned with (standalone when the record names none), holding its step. */
  private strategyOf(t: ContainerTarget, strict = true): RestartStrategy {
    const name = t.strategy ?? 'standalone';
    const s = this.d.strategies.find((x) => x.name === name);
    if (!s && !strict) return { name, steps: [], claim: () => Promise.resolve(false), advance: () => Promise.resolve(false) };
    if (!s) throw new AgentError('FailedPrecondition', `container "${t.name}" was planned for the ${name} strategy, which this agent does not run (start it in Kubernetes mode)`);
    if (strict && !s.steps.includes(t.step)) throw new AgentError('Internal', `container "${t.name}" is at step ${t.step}, which the ${name} strategy does not have`);
    return s;
  }

  private stepContext(op: Operation, t: ContainerTarget, deadline: number, old: ContainerDetail | undefined): StepContext {
    return {
      deadline,
      old,
      step: (s, o) => this.step(op, t, s, o?.sync ?? true),
      mark: (s) => this.mark(op, t, s),
      save: (sync) => this.save(op, sync ?? true),
      publish: () => this.d.publish(op),
      verifying: (on) => {
        op.state = on ? 'Verifying' : 'Recreating';
      },
      cutShort: () => this.cutShort.add(op.id),
      trace: (what) => this.note(op, what),
      resumed: this.resumed.has(op.id),
    };
  }

  /** A runtime call that waits for a runtime briefly away, until `until`; a drain meanwhile pauses the operation. */
  private whenAvailable<T>(what: string, until: number, call: (attempt: number) => Promise<T>): Promise<T> {
    return pausable(call, { clock: this.d.clock, until, what, log: this.d.log, signal: this.d.drainSignal, draining: this.d.draining });
  }
}
