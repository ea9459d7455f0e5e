// Executes a planned restart operation step by step. Every step is written to the journal before the side
// effect it announces, and every step is safe to run again, so the same code both runs a new operation and
// resumes one that an agent killed mid-way left behind (see the state machine in operation.ts).
import { AgentError, asAgentError } from '../errors.js';
import { MAX_TIMER_MS } from '../duration.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { NameSwap, Runtime } from '../runtime/runtime.js';
import type { ContainerDetail, ContainerSpec } from '../runtime/types.js';
import type { ImagePuller } from './image-puller.js';
import { canTransition, isTerminal, type ContainerStep, type ContainerTarget, type Operation, type OperationState } from './operation.js';
import { OPERATION_LABEL, preStopCommand, remainingGrace } from './restart-plan.js';
import { readPodAfter } from './pod-after.js';
import { Reasons } from './reasons.js';
import { pullFailureCause } from '../pull/pull-errors.js';
import type { RestartStrategy, StepContext } from './restart-strategy.js';
import { isTransient, retryDelay, whileUnavailable } from './runtime-wait.js';

export { Reasons };

/** Thrown at a safe point when the agent is draining: the operation stays in the journal and resumes later. */
export class Paused extends Error {
  constructor() {
    super('agent is shutting down; operation paused at a safe point');
  }
}

/** What the executor needs. */
export interface ExecutorDeps {
  runtime: Runtime;
  puller: ImagePuller;
  clock: Clock;
  log: Logger;
  /**
   * Journals (atomically) and publishes a changed operation. With sync the record is also fsynced, so it
   * survives a power loss; without, it survives any crash of the agent process.
   */
  save(op: Operation, sync: boolean): Promise<void>;
  /** Publishes a change to watchers without journaling it (the next save carries it). */
  publish(op: Operation): void;
  /** True once the agent is draining. */
  draining(): boolean;
  /** Aborts when the agent starts draining (cuts pulls short). */
  drainSignal?: AbortSignal;
  /**
   * Plans the operation again from the node's current facts (an operation that waited behind others on the
   * same pod, or was resumed while still Pending). Throws when the request no longer fits the pod.
   */
  replan?: (op: Operation) => Promise<void>;
  /** Called after each container step is journaled (fault injection in tests, tracing). */
  afterStep?: (op: Operation, t: ContainerTarget, step: ContainerStep) => void;
  /** Aborts when the operation is cancelled (cuts its pulls short, unless another caller waits on them). */
  cancelSignal?: (op: Operation) => AbortSignal;
  /** Strategies other than standalone, by the name a planned container carries (see restart-strategy.ts). */
  strategies?: RestartStrategy[];
}

/** How many times a rollback is tried when the runtime fails in a way that can heal (other than being away). */
const ROLLBACK_TRIES = 5;

/**
 * How long a rollback waits for a runtime that is away, at least, ms: the container may be down meanwhile,
 * so this runs past the operation's deadline.
 */
const ROLLBACK_WAIT_MS = 5 * 60_000;

/** A read of the old containers older than this is taken again before they are touched. */
const STALE_READ_MS = 1000;

/** What a failed or cancelled operation's message adds: which containers were already replaced. */
function replacedNote(op: Operation): string {
  const done = op.containers.filter((c) => c.step === 'Done').map((c) => c.name);
  return done.length > 0 ? `; already replaced: ${done.join(', ')}; the others were not touched` : '';
}

/** Intents whose journal record need not be fsynced (see step()). */
const UNSYNCED_STEPS: ReadonlySet<ContainerStep> = new Set(['Stopping', 'RemovingOld']);

/** Least time between two published pull-progress updates of one operation. */
const PULL_PUBLISH_MS = 500;

/** How often the replacement is checked while waiting for min-ready. */
const READY_POLL_MS = 100;

/** Runs one operation to a terminal state (or to a safe point when draining). */
export class RestartExecutor {
  /** Operations whose verification a cancel cut short (they end Cancelled, never Succeeded). */
  private readonly cutShort = new Set<string>();

  constructor(private readonly d: ExecutorDeps) {}

  /** Drives op from whatever state its journal record holds to the end; replan when it waited in the queue. */
  async run(op: Operation, opts: { replan?: boolean } = {}): Promise<void> {
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
    // The old containers' creation configs are read while images are checked or pulled.
    const inspectedAt = this.d.clock.now();
    const inspected = new Map(
      op.containers.map((t) => {
        const p = this.inspectOld(t, deadline);
        p.catch(() => undefined); // awaited (and its error seen) only if that container is reached
        return [t.oldId, p];
      }),
    );
    const podIp = op.podIp ? Promise.resolve(op.podIp) : this.d.runtime.getPod(op.podId).then((p) => p.ip, () => '');
    try {
      if (op.state === 'Pending' || op.state === 'Pulling') {
        this.safePoint(op, deadline);
        this.setState(op, 'Pulling');
        await this.pull(op, deadline);
        this.safePoint(op, deadline);
        this.setState(op, 'Recreating');
      }
      op.podIp = await podIp;
      for (const t of op.containers) {
        if (t.step === 'Done') continue;
        if (t.step !== 'RolledBack' && t.step !== 'Failed') {
          if (t.step === 'Waiting') this.safePoint(op, deadline);
          // A read from before a long pull may be stale (the container could have been stopped meanwhile).
          const fresh = this.d.clock.now() - inspectedAt <= STALE_READ_MS;
          let old: ContainerDetail | undefined;
          if (t.step === 'Waiting') {
            old = fresh ? await inspected.get(t.oldId)! : await this.inspectOld(t, deadline);
          } else {
            // Resuming mid-way: a failed read must not end the operation with the container down. The steps
            // from here need the old container's config only to roll back, and find it again then.
            old = await inspected.get(t.oldId)!.catch((err: unknown) => {
              this.d.log.warn('cannot read the old container while resuming; going on without it', { op: op.id, container: t.name, error: asAgentError(err).message });
              return undefined;
            });
          }
          if (await this.strategyOf(t).advance(op, t, this.stepContext(op, t, deadline, old))) continue;
        }
        // This container failed (and was rolled back where it had been touched): the operation ends here.
        const discarded = t.step === 'RolledBack' && t.reason === Reasons.Cancelled;
        await this.finish(op, discarded ? 'RolledBack' : 'Failed', `${t.error ?? 'replacement failed'}${replacedNote(op)}`, undefined, t.reason ?? Reasons.ReplacementFailed);
        return;
      }
      if (this.cutShort.delete(op.id)) {
        const kept = op.containers.filter((c) => c.step === 'Done').map((c) => c.name).join(', ');
        await this.finish(op, 'Cancelled', `operation ${op.id} was cancelled while verifying; the running replacements were kept without the full min-ready window: ${kept}`, 'Cancelled', Reasons.Cancelled);
        return;
      }
      op.podAfter = await readPodAfter(this.d.runtime, op);
      await this.finish(op, 'Succeeded');
    } catch (err) {
      if (err instanceof Paused) throw err;
      const e = asAgentError(err);
      // Stopped at a safe point: containers already replaced stay replaced, the others were not touched.
      await this.finish(op, e.kind === 'Cancelled' ? 'Cancelled' : 'Failed', e.message + replacedNote(op), e.kind, e.reason);
    } finally {
      this.cutShort.delete(op.id);
    }
  }

  private safePoint(op: Operation, deadline: number): void {
    if (op.cancelRequested) throw new AgentError('Cancelled', `operation ${op.id} was cancelled`, { reason: Reasons.Cancelled });
    if (this.d.draining()) throw new Paused();
    if (this.d.clock.now() > deadline) throw new AgentError('DeadlineExceeded', `operation ${op.id} ran out of time (timeout ${op.request.timeoutMs / 1000}s)`, { reason: Reasons.Deadline });
  }

  /** Makes every new image present, all at once (the pull service bounds the node's concurrency). */
  private async pull(op: Operation, deadline: number): Promise<void> {
    // A container that keeps its image runs it already. (Were the image record gone, the create would fail
    // before anything is stopped.)
    const images = [...new Set(op.containers.filter((c) => c.step === 'Waiting' && c.newImage !== c.oldImage).map((c) => c.newImage))];
    const abort = new AbortController();
    // The operation's deadline, on the injected clock; stopped when the pulls end.
    const stopTimer = new AbortController();
    this.d.clock.sleep(Math.min(MAX_TIMER_MS, Math.max(1, deadline - this.d.clock.now())), stopTimer.signal).then(
      () => abort.abort(new AgentError('DeadlineExceeded', 'operation deadline')),
      () => undefined,
    );
    op.pulls = images.map((image) => ({ image, bytesDone: 0, bytesTotal: 0, done: false, pulled: false }));
    let lastPublish = 0;
    const signals = [abort.signal, this.d.drainSignal, this.d.cancelSignal?.(op)].filter((x): x is AbortSignal => x !== undefined);
    try {
      await Promise.all(
        op.pulls.map(async (p) => {
          try {
            const ensured = this.d.puller.ensure(p.image, {
              signal: AbortSignal.any(signals),
              onProgress: (pr) => {
                p.bytesDone = pr.bytesDone;
                p.bytesTotal = pr.bytesTotal;
                if (this.d.clock.now() - lastPublish >= PULL_PUBLISH_MS) {
                  lastPublish = this.d.clock.now();
                  this.d.publish(op);
                }
              },
            });
            for (const t of op.containers) {
              if (t.step === 'Waiting' && t.newImage === p.image) this.strategyOf(t).pulling?.(op, t, ensured);
            }
            const got = await ensured;
            p.done = true;
            p.pulled = got.pulled;
            this.d.publish(op);
            this.d.log.info('image ready', { op: op.id, image: p.image, pulled: got.pulled, digest: got.digest });
          } catch (err) {
            if (this.d.draining()) throw new Paused();
            const e = asAgentError(err);
            abort.abort(e);
            if (op.cancelRequested) throw new AgentError('Cancelled', `operation ${op.id} was cancelled while pulling ${p.image}; nothing was stopped`, { reason: Reasons.Cancelled });
            // One sentence: the subject once, then the cause; the reason is a field of its own.
            throw new AgentError(e.kind === 'Cancelled' ? 'DeadlineExceeded' : e.kind, `image "${p.image}" could not be pulled: ${pullFailureCause(e, p.image)}; nothing was stopped`, { cause: err, reason: Reasons.PullFailed });
          }
        }),
      );
    } finally {
      stopTimer.abort();
    }
  }

  /** Moves the operation to a non-terminal state; published now, journaled with the next step. */
  private setState(op: Operation, state: OperationState): void {
    if (op.state === state) return;
    this.checkTransition(op, state);
    op.state = state;
    op.updatedAt = new Date(this.d.clock.now()).toISOString();
    this.d.publish(op);
  }

  private checkTransition(op: Operation, to: OperationState): void {
    if (!canTransition(op.state, to)) throw new AgentError('Internal', `operation ${op.id}: illegal transition ${op.state} -> ${to}`);
  }

  /**
   * Enters a step and journals it before its side effect. Creating, PreStop, RollingBack and the end states
   * are fully durable. Stopping (which stands for stop, then start) and RemovingOld skip the directory fsync:
   * a crash of the agent keeps them, and if a power loss brings back the record before one, recovery from it
   * repeats the same idempotent calls (stop, start with a state check, remove).
   */
  private async step(op: Operation, t: ContainerTarget, step: ContainerStep): Promise<void> {
    this.record(t, step);
    await this.save(op, !UNSYNCED_STEPS.has(step));
    this.d.afterStep?.(op, t, step);
  }

  /**
   * Enters a step that records a finished side effect. It is published at once and reaches the journal with
   * the next intent: recovery from the previous intent repeats an idempotent call, so nothing is lost.
   */
  private mark(op: Operation, t: ContainerTarget, step: ContainerStep): void {
    this.record(t, step);
    op.updatedAt = new Date(this.d.clock.now()).toISOString();
    this.d.publish(op);
    this.d.afterStep?.(op, t, step);
  }

  private record(t: ContainerTarget, step: ContainerStep): void {
    t.step = step;
    t.steps.push({ step, at: new Date(this.d.clock.now()).toISOString() });
  }

  private async save(op: Operation, sync = true): Promise<void> {
    op.updatedAt = new Date(this.d.clock.now()).toISOString();
    await this.d.save(op, sync);
  }

  private async finish(op: Operation, state: OperationState, error?: string, kind?: string, reason?: string): Promise<void> {
    if (isTerminal(op.state)) return;
    this.checkTransition(op, state);
    op.state = state;
    if (error) op.error = error;
    if (kind) op.errorKind = kind;
    if (reason) op.reason = reason;
    op.finishedAt = new Date(this.d.clock.now()).toISOString();
    await this.save(op);
    this.d.log.info('operation finished', { op: op.id, pod: op.podName, state, error });
    for (const s of this.d.strategies ?? []) {
      if (!s.finished || !op.containers.some((c) => c.strategy === s.name)) continue;
      await s.finished(op).catch((err: unknown) => this.d.log.warn('reporting the end of an operation failed', { op: op.id, strategy: s.name, error: asAgentError(err).message }));
    }
  }

  /** The strategy a container was planned with; standalone (this executor's own steps) by default. */
  private strategyOf(t: ContainerTarget): RestartStrategy {
    const s = t.strategy && t.strategy !== 'standalone' ? this.d.strategies?.find((x) => x.name === t.strategy) : undefined;
    if (t.strategy && t.strategy !== 'standalone' && !s) throw new AgentError('FailedPrecondition', `container "${t.name}" was planned for the ${t.strategy} strategy, which this agent does not run (start it in Kubernetes mode)`);
    return s ?? this.standalone;
  }

  /** The agent recreates the container itself: the steps below. */
  private readonly standalone: RestartStrategy = {
    name: 'standalone',
    claim: () => Promise.resolve(true),
    advance: (op, t, ctx) => this.advance(op, t, ctx.deadline, ctx.old),
  };

  private stepContext(op: Operation, t: ContainerTarget, deadline: number, old: ContainerDetail | undefined): StepContext {
    return { deadline, old, step: (s) => this.step(op, t, s), mark: (s) => this.mark(op, t, s), publish: () => this.d.publish(op), cutShort: () => this.cutShort.add(op.id) };
  }

  /**
   * Moves one container forward from its journaled step until Done; on failure rolls back to the old config.
   * Returns false when the container was rolled back or failed.
   */
  private async advance(op: Operation, t: ContainerTarget, deadline: number, inspected: ContainerDetail | undefined): Promise<boolean> {
    const rt = this.d.runtime;
    const old = inspected;
    if (t.step === 'Waiting' && (!old || old.state !== 'running')) {
      t.reason = Reasons.Interrupted;
      t.error = `${Reasons.Interrupted}: container "${t.name}" (${t.oldId.slice(0, 12)}) is ${old ? old.state : 'gone'}; it was not touched`;
      await this.step(op, t, 'Failed');
      return false;
    }
    const oldSpec = old?.spec;
    let stopBegan: number | undefined;
    try {
      for (;;) {
        switch (t.step) {
          case 'Waiting':
          case 'Creating': {
            if (t.step === 'Creating') {
              const found = await this.whenAvailable(`look for the replacement of "${t.name}"`, deadline, () => this.findReplacement(op, t));
              if (found) {
                t.newId = found;
                this.mark(op, t, 'Created');
                break;
              }
            }
            if (!oldSpec) throw new AgentError('FailedPrecondition', `old container ${t.oldId} disappeared before its replacement was created`);
            await this.step(op, t, 'Creating');
            const spec = this.replacementSpec(op, t, oldSpec);
            try {
              // A create the runtime carried out before it went away is found, not made twice.
              t.newId = await this.whenAvailable(`create the replacement of "${t.name}"`, deadline, async (attempt) => {
                const found = attempt > 1 ? await this.findReplacement(op, t) : undefined;
                return found ?? (await rt.createContainer(op.podId, spec, this.tempName(op, t)));
              });
            } catch (err) {
              if (err instanceof Paused) throw err;
              const e = asAgentError(err);
              // Nothing was stopped: the old container still runs. A create that failed on our side (a
              // deadline) may still have happened in the runtime: remove what it left.
              const stray = await this.findReplacement(op, t).catch(() => undefined);
              if (stray) await rt.removeContainer(stray).catch(() => undefined);
              t.reason = Reasons.CreateFailed;
              t.error = `${Reasons.CreateFailed}: ${e.message}`;
              await this.step(op, t, 'Failed');
              return false;
            }
            this.mark(op, t, 'Created');
            break;
          }
          case 'Created': {
            if (op.cancelRequested || this.d.clock.now() > deadline) {
              await this.whenAvailable(`remove the replacement of "${t.name}"`, this.d.clock.now() + ROLLBACK_WAIT_MS, () => rt.removeContainer(t.newId));
              t.reason = op.cancelRequested ? Reasons.Cancelled : Reasons.Deadline;
              t.error = op.cancelRequested ? `${Reasons.Cancelled}: cancelled before the old container was stopped` : `${Reasons.Deadline}: ran out of time before the old container was stopped`;
              await this.step(op, t, 'RolledBack');
              return false;
            }
            const hook = oldSpec && !op.request.skipPreStop ? preStopCommand(oldSpec.labels, oldSpec.annotations) : undefined;
            await this.step(op, t, hook ? 'PreStop' : 'Stopping');
            break;
          }
          case 'PreStop': {
            const hook = oldSpec && !op.request.skipPreStop ? preStopCommand(oldSpec.labels, oldSpec.annotations) : undefined;
            const started = this.d.clock.now();
            let grace = op.request.graceSeconds;
            if (hook && old?.state === 'running') {
              try {
                const secondsLeft = Math.ceil((deadline - this.d.clock.now()) / 1000);
                const res = await rt.exec(t.oldId, hook, Math.max(1, Math.min(op.request.graceSeconds, secondsLeft)));
                if (res.exitCode !== 0) this.d.log.warn('preStop hook failed', { op: op.id, container: t.name, reason: Reasons.PreStopHookError, exitCode: res.exitCode, stderr: res.stderr.slice(0, 500) });
              } catch (err) {
                this.d.log.warn('preStop hook failed', { op: op.id, container: t.name, reason: Reasons.PreStopHookError, error: asAgentError(err).message });
              }
              grace = remainingGrace(op.request.graceSeconds, this.d.clock.now() - started);
            }
            await this.step(op, t, 'Stopping');
            stopBegan = this.d.clock.now();
            await this.whenAvailable(`stop the old container of "${t.name}"`, deadline, () => rt.stopContainer(t.oldId, grace));
            this.mark(op, t, 'Stopped');
            break;
          }
          case 'Stopping':
            stopBegan = this.d.clock.now();
            await this.whenAvailable(`stop the old container of "${t.name}"`, deadline, () => rt.stopContainer(t.oldId, op.request.graceSeconds));
            this.mark(op, t, 'Stopped');
            break;
          case 'Stopped':
            await this.whenAvailable(`rename the containers of "${t.name}"`, deadline, () => rt.swapNames(this.nameSwap(op, t)));
            // No journal write between stop and start (it would add to the downtime): the Stopping record
            // already stands for "stop, then start", and recovery from it repeats both idempotently.
            this.mark(op, t, 'Starting');
            break;
          case 'Starting': {
            await this.whenAvailable(`start the replacement of "${t.name}"`, deadline, () => this.startReplacement(op, t, oldSpec));
            if (stopBegan !== undefined) t.downtimeMs = this.d.clock.now() - stopBegan;
            this.mark(op, t, 'Started');
            break;
          }
          case 'Started':
          case 'Verifying': {
            if (op.state !== 'Verifying') op.state = 'Verifying';
            this.mark(op, t, 'Verifying');
            // min-ready 0 asks for no verification window: a start that returned is enough.
            if (op.request.minReadyMs > 0) await this.waitReady(op, t, op.request.minReadyMs, deadline);
            op.state = 'Recreating';
            this.mark(op, t, 'Verified');
            break;
          }
          case 'Verified':
          case 'RemovingOld':
            await this.step(op, t, 'RemovingOld');
            // Past the deadline too: the replacement runs and is verified, only the old container is left.
            await this.whenAvailable(`remove the old container of "${t.name}"`, Math.max(deadline, this.d.clock.now() + ROLLBACK_WAIT_MS), () => rt.removeContainer(t.oldId));
            this.mark(op, t, 'Done');
            return true;
          case 'RollingBack':
            throw new AgentError('Aborted', t.error ?? 'rollback was interrupted; resuming it');
          case 'Done':
            return true;
          case 'RolledBack':
          case 'Failed':
            return false;
        }
      }
    } catch (err) {
      if (err instanceof Paused) throw err;
      const e = asAgentError(err);
      this.d.log.warn('container replacement failed; rolling back', { op: op.id, container: t.name, step: t.step, error: e.message });
      if (!t.error || t.step !== 'RollingBack') {
        t.error = e.message;
        t.reason = e.reason ?? Reasons.ReplacementFailed;
      }
      await this.rollback(op, t, oldSpec, deadline);
      return false;
    }
  }

  /**
   * Starts the replacement. Resumed after a crash (or once the runtime is back), it may have been started
   * already, or have exited. A start that failed because the runtime was away keeps its kind (Unavailable), so
   * that it is made again once the runtime answers. A replacement whose start was cut short before it ran (the
   * agent was killed mid-call; the runtime says Aborted) is created again, once, and started.
   */
  private async startReplacement(op: Operation, t: ContainerTarget, oldSpec: ContainerSpec | undefined): Promise<void> {
    const rt = this.d.runtime;
    for (let recreated = false; ; recreated = true) {
      try {
        await rt.startContainer(t.newId);
        return;
      } catch (err) {
        if (AgentError.is(err, 'Aborted') && !recreated && oldSpec) {
          this.d.log.warn('the replacement never ran: its start was cut short; creating it again', { op: op.id, container: t.name, error: err.message });
          await rt.removeContainer(t.newId);
          t.newId = await rt.createContainer(op.podId, this.replacementSpec(op, t, oldSpec), this.tempName(op, t));
          await this.save(op);
          continue;
        }
        const cur = await rt.inspectContainer(t.newId);
        if (cur.state === 'exited') throw this.exitedError(t, cur);
        if (cur.state !== 'running') {
          throw new AgentError(asAgentError(err).kind, `${Reasons.StartFailed}: replacement for "${t.name}" did not start: ${asAgentError(err).message}`, { cause: err });
        }
        return;
      }
    }
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

  /**
   * Runs a runtime call that is safe to repeat, waiting for a runtime that is briefly away until `until`
   * (see runtime-wait.ts). Draining meanwhile pauses the operation: the journaled intent is repeated by the
   * next agent.
   */
  private async whenAvailable<T>(what: string, until: number, call: (attempt: number) => Promise<T>): Promise<T> {
    try {
      return await whileUnavailable(call, { clock: this.d.clock, until, what, log: this.d.log, signal: this.d.drainSignal });
    } catch (err) {
      if (isTransient(err) && this.d.draining()) throw new Paused();
      throw err;
    }
  }

  /** The old container's spec with the new image and attempt, labelled with this operation. */
  private replacementSpec(op: Operation, t: ContainerTarget, old: ContainerSpec): ContainerSpec {
    return { ...old, image: t.newImage, attempt: t.newAttempt, labels: { ...old.labels, [OPERATION_LABEL]: op.id } };
  }

  /** The replacement's name while the old container still holds its own, where names are unique keys (Docker). */
  private tempName(op: Operation, t: ContainerTarget): string | undefined {
    return this.d.runtime.replacementName(t.oldRuntimeName, op.id.slice(0, 8));
  }

  private nameSwap(op: Operation, t: ContainerTarget): NameSwap {
    return { oldId: t.oldId, newId: t.newId, name: t.oldRuntimeName, tag: op.id.slice(0, 8) };
  }

  /** A replacement this operation created before the agent died, found by its label. */
  private async findReplacement(op: Operation, t: ContainerTarget): Promise<string | undefined> {
    // Every container, not the pod's: on Docker a pod of one's replacement is a pod of its own.
    const all = await this.d.runtime.listContainers();
    const mine = all.filter((c) => c.labels[OPERATION_LABEL] === op.id && c.id !== t.oldId && (c.name === t.name || c.runtimeName === this.tempName(op, t)));
    return mine.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())[0]?.id;
  }

  /**
   * Waits minReadyMs, failing as soon as the replacement is seen not running. A cancel ends the wait at once:
   * a replacement running then is kept (the operation ends Cancelled after it, see run()), one that is not
   * is rolled back as usual. A runtime that is briefly away says nothing about the replacement: it is looked
   * at again once the runtime answers (until the deadline).
   */
  private async waitReady(op: Operation, t: ContainerTarget, minReadyMs: number, deadline: number): Promise<void> {
    const until = this.d.clock.now() + minReadyMs;
    let unanswered = 0;
    for (;;) {
      if (op.cancelRequested) {
        if ((await this.d.runtime.containerState(t.newId)) !== 'running') throw this.exitedError(t, await this.d.runtime.inspectContainer(t.newId));
        this.d.log.info('verification cut short by a cancel; the running replacement is kept', { op: op.id, container: t.name });
        this.cutShort.add(op.id);
        return;
      }
      if (this.d.clock.now() > deadline) {
        const why = unanswered > 0 ? ': the runtime did not answer' : '';
        throw new AgentError('DeadlineExceeded', `${Reasons.Deadline}: replacement for "${t.name}" was not verified before the operation's deadline${why}`, { reason: Reasons.Deadline });
      }
      const left = until - this.d.clock.now();
      try {
        if (left > 0) {
          if ((await this.d.runtime.containerState(t.newId)) !== 'running') throw this.exitedError(t, await this.d.runtime.inspectContainer(t.newId));
        } else {
          // A replacement its restart policy brought back (Docker) looks running between crashes: it is not ready.
          const cur = await this.d.runtime.inspectContainer(t.newId);
          if (cur.state !== 'running' || (cur.restartCount ?? 0) > 0) throw this.exitedError(t, cur);
          return;
        }
        if (unanswered > 0) this.d.log.info('runtime available again; verifying goes on', { container: t.name });
        unanswered = 0;
      } catch (err) {
        if (!isTransient(err)) throw err;
        if (this.d.draining()) throw new Paused();
        if (unanswered++ === 0) this.d.log.warn('runtime unavailable while verifying the replacement; waiting for it', { container: t.name, error: asAgentError(err).message });
      }
      await this.d.clock.sleep(unanswered > 0 ? retryDelay(unanswered) : Math.max(1, Math.min(READY_POLL_MS, left)));
    }
  }

  private exitedError(t: ContainerTarget, cur: ContainerDetail): AgentError {
    t.exitCode = cur.exitCode;
    const why = (cur.reason ? `, reason ${cur.reason}` : '') + (cur.restartCount ? `, restarted ${cur.restartCount} times by its restart policy` : '');
    const state = cur.state === 'running' ? 'crash-looping' : cur.state;
    return new AgentError('Aborted', `${Reasons.ExitedEarly}: replacement for "${t.name}" (image ${t.newImage}) is ${state} with exit code ${cur.exitCode ?? 'unknown'}${why}`, { reason: Reasons.ExitedEarly });
  }

  /**
   * Brings the old config back: removes the replacement and runs the old container again (started again where
   * the runtime restarts stopped containers; elsewhere a new one is created from the old config). Safe to run
   * again after a crash.
   */
  private async rollback(op: Operation, t: ContainerTarget, oldSpec: ContainerSpec | undefined, deadline: number): Promise<void> {
    await this.step(op, t, 'RollingBack');
    // The container may be down: a runtime that is away is waited for, past the operation's deadline if need be.
    const until = Math.max(deadline, this.d.clock.now() + ROLLBACK_WAIT_MS);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.whenAvailable(`roll back "${t.name}"`, until, () => this.rollbackOnce(op, t, oldSpec));
        await this.step(op, t, 'RolledBack');
        this.d.log.info('rolled back', { op: op.id, container: t.name, running: t.rollbackId });
        return;
      } catch (err) {
        if (err instanceof Paused) throw err;
        const e = asAgentError(err);
        // Other failures that can heal are tried again a few times (a runtime that stayed away was waited for).
        if (attempt < ROLLBACK_TRIES && !isTransient(e) && e.kind !== 'NotFound' && e.kind !== 'InvalidArgument' && e.kind !== 'FailedPrecondition') {
          this.d.log.warn('rollback step failed; retrying', { op: op.id, container: t.name, attempt, error: e.message });
          await this.d.clock.sleep(Math.min(8000, 500 * 2 ** (attempt - 1)));
          continue;
        }
        t.reason = Reasons.RollbackFailed;
        t.error = `${t.error ?? 'replacement failed'}; ${Reasons.RollbackFailed}: ${e.message}; container "${t.name}" may need manual attention`;
        await this.step(op, t, 'Failed');
        return;
      }
    }
  }

  /** One pass of the rollback; every call in it is safe to repeat. */
  private async rollbackOnce(op: Operation, t: ContainerTarget, oldSpec: ContainerSpec | undefined): Promise<void> {
    const rt = this.d.runtime;
    if (t.newId) {
      try {
        const cur = await rt.inspectContainer(t.newId);
        if (cur.exitCode !== undefined && cur.state === 'exited' && t.exitCode === undefined) t.exitCode = cur.exitCode;
        await rt.stopContainer(t.newId, 2);
      } catch (err) {
        if (!AgentError.is(err, 'NotFound')) throw err;
      }
    }
    let old: ContainerDetail | undefined;
    try {
      old = await rt.inspectContainer(t.oldId);
    } catch (err) {
      if (!AgentError.is(err, 'NotFound')) throw err;
    }
    await rt.restoreNames(this.nameSwap(op, t));
    if (t.newId) await rt.removeContainer(t.newId);
    if (old?.state === 'running') {
      t.rollbackId = t.oldId;
    } else if (rt.capabilities.restartsStopped && old) {
      await rt.startContainer(t.oldId);
      t.rollbackId = t.oldId;
    } else {
      // A new instance from the old config (CRI: a container runs once). After a crash it may exist already (the old one then gone).
      let again = await this.findRollback(op, t);
      if (again && !['created', 'running'].includes(await rt.containerState(again))) {
        // An earlier try created it but its start failed: that instance cannot start again (CRI).
        await rt.removeContainer(again);
        again = undefined;
      }
      if (!again) {
        const spec = oldSpec ?? old?.spec;
        if (!spec) throw new AgentError('FailedPrecondition', `old container ${t.oldId} is gone and its config with it`);
        again = await rt.createContainer(op.podId, { ...spec, attempt: t.newAttempt + 1, labels: { ...spec.labels, [OPERATION_LABEL]: op.id } });
      }
      t.rollbackId = again;
      if ((await rt.containerState(again)) === 'created') await rt.startContainer(again);
      await rt.removeContainer(t.oldId);
    }
  }

  private async findRollback(op: Operation, t: ContainerTarget): Promise<string | undefined> {
    const all = await this.d.runtime.listContainers({ podId: op.podId });
    return all.find((c) => c.labels[OPERATION_LABEL] === op.id && c.name === t.name && c.attempt === t.newAttempt + 1)?.id;
  }
}
