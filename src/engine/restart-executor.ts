// Runs a planned restart operation: the loop around the strategies. It plans a queued operation again, pulls
// the new images, hands each container in turn to the strategy it was planned with (strategy.advance), and
// finishes the operation. Every step is written to the journal before the side effect it announces, and every
// step is safe to run again, so the same code both runs a new operation and resumes one that an agent killed
// mid-way left behind (see the state machine in operation.ts).
import { AgentError, asAgentError } from '../errors.js';
import type { ContainerDetail } from '../runtime/types.js';
import type { ExecutorDeps } from './executor-deps.js';
import type { OldRead } from './first-reads.js';
import { pullImages } from './image-pulls.js';
import { isTerminal, type ContainerTarget, type Operation } from './operation.js';
import { Paused, Unrecorded, whenAvailable, type WhenAvailable } from './paused.js';
import { OperationSteps } from './operation-steps.js';
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

  /** The record side of each step (state, steps, journal writes, the end). */
  private readonly steps: OperationSteps;
  /** A runtime call that waits for a runtime briefly away; a drain meanwhile pauses the operation. */
  private readonly whenAvailable: WhenAvailable;

  constructor(private readonly d: ExecutorDeps) {
    this.steps = new OperationSteps(d);
    this.whenAvailable = whenAvailable(d);
  }

  /** Operations read back from the journal by this agent (see StepContext.resumed). */
  private readonly resumed = new Set<string>();

  /**
   * Drives op from whatever state its journal record holds to the end (planAgain when it waited its turn
   * behind another on its pod or was resumed: see TurnPlanner; resumed when it was read back from the journal), then does what its strategies left until after it was
   * reported (cleanup).
   */
  async run(op: Operation, opts: { planAgain?: boolean; resumed?: boolean } = {}): Promise<void> {
    if (opts.resumed) this.resumed.add(op.id);
    this.steps.note(op, 'running');
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
   * journal's error once this is done (RestartIntake.record).
   */
  private async abandon(op: Operation): Promise<void> {
    for (const t of op.containers) {
      if (!t.newId) continue;
      await this.d.runtime.removeContainer(t.newId).catch((err: unknown) => {
        if (!AgentError.is(err, 'NotFound')) this.d.log.warn('cannot remove the replacement of an operation that was not recorded', { op: op.id, container: t.name, id: t.newId, error: asAgentError(err).message });
      });
    }
    this.steps.note(op, 'abandoned: not recorded');
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

  private async drive(op: Operation, opts: { planAgain?: boolean }): Promise<void> {
    const deadline = Date.parse(op.createdAt) + op.request.timeoutMs;
    const planner = this.d.planner;
    if (opts.planAgain && op.state === 'Pending' && planner) {
      try {
        // A runtime that is briefly away says nothing about the pod: it is waited for, until the deadline.
        await this.whenAvailable('plan the operation again', deadline, () => planner.planOnPodNow(op));
      } catch (err) {
        if (err instanceof Paused) throw err;
        const e = asAgentError(err);
        if (isTransient(e)) await this.steps.finish(op, 'Failed', `${e.message}; nothing was changed`, e.kind, Reasons.Deadline);
        else await this.steps.finish(op, 'Failed', `the pod changed while the operation waited: ${e.message}; nothing was changed`, e.kind, Reasons.PodChanged);
        return;
      }
    }
    // The old containers are read (their creation configs, for strategies that need them) and the pod's IP
    // while images are checked or pulled; a new operation's reads began as it was planned.
    const first = this.d.reads.take(op, deadline, opts.planAgain === true);
    const podIp = first.podIp.then((ip) => (op.podIp = ip));
    try {
      if (op.state === 'Pending' || op.state === 'Pulling') {
        this.safePoint(op, deadline);
        this.steps.setState(op, 'Pulling');
        await pullImages(op, deadline, {
          ...this.d,
          publish: (o) => this.d.store.publish(o),
          signals: [this.d.drainSignal, this.d.store.cancelled(op)].filter((x): x is AbortSignal => x !== undefined),
          pulling: (t, result) => this.strategyOf(t).pulling?.(op, t, result),
          // A download may take minutes: the operation is journaled as it begins (an operation admitted without a
          // Pending record has its first record then), so that a crash meanwhile resumes it. Not awaited: the next
          // write of the record comes after it, and a write that fails is fatal (see EngineDeps.onFatal).
          downloading: () => void this.steps.save(op, true, 'journaled as its image downloads').catch(() => undefined),
        });
        this.steps.note(op, 'images present');
        this.safePoint(op, deadline);
        this.steps.setState(op, 'Recreating');
      }
      let failed: ContainerTarget | undefined;
      for (const t of op.containers) {
        if (t.step === 'Done') continue;
        // After a failure only the containers already under way (replaced together with an earlier one) go on,
        // to their end: the others are not touched.
        if (failed && t.step === 'Waiting') continue;
        if (t.step !== 'RolledBack' && t.step !== 'Failed' && (await this.advance(op, t, deadline, first.olds.get(t.oldId) ?? this.d.reads.readOld(op, t, deadline), first.at))) continue;
        failed ??= t;
      }
      if (failed) {
        // A container failed (and was rolled back where it had been touched): the operation ends here.
        const discarded = failed.step === 'RolledBack' && failed.reason === Reasons.Cancelled;
        await this.steps.finish(op, discarded ? 'RolledBack' : 'Failed', `${failed.error ?? 'replacement failed'}${this.replacedNote(op)}`, undefined, failed.reason ?? Reasons.ReplacementFailed);
        return;
      }
      if (this.cutShort.delete(op.id)) {
        const kept = this.replaced(op).join(', ');
        await this.steps.finish(op, 'Cancelled', `operation ${op.id} was cancelled while verifying; the running replacements were kept without the full min-ready window: ${kept}`, 'Cancelled', Reasons.Cancelled);
        return;
      }
      await podIp;
      op.podAfter = await this.steps.readPodAfter(op);
      this.steps.note(op, 'pod read after');
      await this.steps.finish(op, 'Succeeded');
    } catch (err) {
      if (err instanceof Paused || err instanceof Unrecorded) throw err;
      const e = asAgentError(err);
      // Stopped at a safe point: containers already replaced stay replaced, the others were not touched.
      await this.steps.finish(op, e.kind === 'Cancelled' ? 'Cancelled' : 'Failed', e.message + this.replacedNote(op), e.kind, e.reason);
    } finally {
      this.cutShort.delete(op.id);
      this.steps.forget(op.id);
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
      const read = this.d.clock.now() - readAt <= STALE_READ_MS ? await first : await this.d.reads.readOld(op, t, deadline);
      if (read.state !== 'running') {
        t.reason = Reasons.Interrupted;
        t.error = `${Reasons.Interrupted}: container "${t.name}" (${t.oldId.slice(0, 12)}) is ${read.state}; it was not touched`;
        await this.steps.step(op, t, 'Failed');
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
      step: (s, o) => this.steps.step(op, t, s, o?.sync ?? true),
      mark: (s) => this.steps.mark(op, t, s),
      markOf: (c, s) => this.steps.mark(op, c, s),
      save: (sync) => this.steps.save(op, sync ?? true),
      publish: () => this.d.store.publish(op),
      verifying: (on) => {
        op.state = on ? 'Verifying' : 'Recreating';
      },
      cutShort: () => this.cutShort.add(op.id),
      trace: (what) => this.steps.note(op, what),
      resumed: this.resumed.has(op.id),
    };
  }
}
