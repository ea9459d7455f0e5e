// The record side of running an operation: its state and each container's steps entered, published and
// journaled in the order the state machine of operation.ts asks (a step is on record before its side effect),
// the end reported, and the pod read after the restart begun as its last replacement starts.
import { AgentError, asAgentError } from '../errors.js';
import type { ExecutorDeps } from './executor-deps.js';
import { canTransition, isTerminal, type ContainerStep, type ContainerTarget, type Operation, type OperationState } from './operation.js';
import { Unrecorded } from './paused.js';
import { podReadableAtStart, readPodAfter } from './pod-after.js';

/** Enters, publishes and journals the states and steps of running operations. */
export class OperationSteps {
  /** Per operation: its pod's read after the restart, begun as its last replacement starts (see podReadableAtStart). */
  private readonly podAfter = new Map<string, Promise<Operation['podAfter']>>();

  constructor(private readonly d: ExecutorDeps) {}

  /** The pod's read after the restart: the one begun early, else one made now. */
  readPodAfter(op: Operation): Promise<Operation['podAfter']> {
    return this.podAfter.get(op.id) ?? readPodAfter(this.d.runtime, op);
  }

  /** Forgets op's early read of the pod (it has run). */
  forget(id: string): void {
    this.podAfter.delete(id);
  }

  /** Moves the operation to a non-terminal state; published now, journaled with the next step. */
  setState(op: Operation, state: OperationState): void {
    if (op.state === state) return;
    this.checkTransition(op, state);
    op.state = state;
    op.updatedAt = this.nowIso();
    this.d.store.publish(op);
  }

  private checkTransition(op: Operation, to: OperationState): void {
    if (!canTransition(op.state, to)) throw new AgentError('Internal', `operation ${op.id}: illegal transition ${op.state} -> ${to}`);
  }

  /** Enters a step and journals it before its side effect (see StepContext.step). */
  async step(op: Operation, t: ContainerTarget, step: ContainerStep, sync = true): Promise<void> {
    this.record(t, step, op);
    await this.save(op, sync, `${t.name}: ${step} journaled`);
    this.d.afterStep?.(op, t, step);
  }

  /**
   * Enters a step that records a finished side effect. It is published at once and reaches the journal with
   * the next intent: recovery from the previous intent repeats an idempotent call, so nothing is lost.
   */
  mark(op: Operation, t: ContainerTarget, step: ContainerStep): void {
    this.record(t, step, op);
    op.updatedAt = this.nowIso();
    this.d.store.publish(op);
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

  /** Journals op once its first record is (Unrecorded when that failed); sync: see OperationStore.record. */
  async save(op: Operation, sync = true, what = `${op.state} journaled`): Promise<void> {
    const first = this.d.store.firstRecord(op);
    if (first) await first.catch((err: unknown) => Promise.reject(new Unrecorded(err)));
    op.updatedAt = this.nowIso();
    await this.d.store.record(op, sync);
    this.note(op, `${what}${sync ? ' (directory synced)' : ''}`);
  }

  /** Marks that `what` happened now, in the operation's step trace. */
  note(op: Operation, what: string): void {
    this.d.trace?.mark(op.id, what);
  }

  private nowIso(): string {
    return new Date(this.d.clock.now()).toISOString();
  }

  /** Ends op in a terminal state, journaled, and tells the strategies it had containers of. */
  async finish(op: Operation, state: OperationState, error?: string, kind?: string, reason?: string): Promise<void> {
    if (isTerminal(op.state)) return;
    this.checkTransition(op, state);
    op.state = state;
    if (error) op.error = error;
    if (kind) op.errorKind = kind;
    if (reason) op.reason = reason;
    op.finishedAt = this.nowIso();
    // Success is told before it is journaled: nothing on the caller's path follows the verification. Were the
    // agent to die before the write, the record (every container verified) ends the operation the same way.
    if (state === 'Succeeded') this.d.store.publish(op);
    this.note(op, `reported ${state}`);
    await this.save(op);
    this.d.log.info('operation finished', { op: op.id, pod: op.podName, state, reason, error });
    for (const s of this.d.strategies) {
      if (!s.finished || !op.containers.some((c) => (c.strategy ?? 'standalone') === s.name)) continue;
      await s.finished(op).catch((err: unknown) => this.d.log.warn('reporting the end of an operation failed', { op: op.id, strategy: s.name, error: asAgentError(err).message }));
      this.note(op, `${s.name}: end reported`);
    }
  }
}
