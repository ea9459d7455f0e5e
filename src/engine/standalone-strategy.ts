// The standalone strategy: the agent recreates the container itself, through the runtime, with the old
// container's own config and the new image. Where names are unique keys (Docker) the replacement is created
// under a temporary name and the names are swapped between stop and start.
//
//   Waiting -> Creating -> Created -> [PreStop] -> Stopping -> Stopped -> Starting -> Started
//           -> Verifying -> Verified  ...the operation is reported...  -> RemovingOld -> Done
//   Created (cancelled or out of time) -> RolledBack          (the replacement is discarded, nothing was stopped)
//   any step from Creating on, failing -> RollingBack -> RolledBack | Failed
//
// Every step is journaled before its side effect, except Stopped, Starting and Started, which record a
// finished call and reach the journal with the next intent: Stopping stands for "stop, then start", and its
// recovery repeats both idempotently. Creating is not journaled by itself either (it reaches the journal with
// Stopping): the replacement is inert until Stopping is on record, and a resumed operation at Waiting looks for
// it by its label before creating one. Every step is safe to run again after a crash.
//
// Verified ends the container's part of the operation: the caller is told as soon as every replacement is
// verified, and the old container is removed after that (cleanup). The journal's record of the ended operation
// with a container at Verified or RemovingOld says the removal is still owed, so a crash never leaves the old
// container behind: the next agent removes it at start-up.
import { AgentError, asAgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import { backoffDelay } from '../backoff.js';
import type { Logger } from '../log.js';
import type { NameSwap, Runtime } from '../runtime/runtime.js';
import type { ContainerDetail, ContainerSpec } from '../runtime/types.js';
import { CommonSteps, type ContainerTarget, type Operation, type RestartRequest } from './operation.js';
import { Paused, Unrecorded, pausable } from './paused.js';
import { AGENT_LABEL, OPERATION_LABEL, preStopCommand, remainingGrace, type PlannedTarget } from './restart-plan.js';
import { Reasons } from './reasons.js';
import type { RestartStrategy, StepContext } from './restart-strategy.js';
import { isTransient, retryDelay } from './runtime-wait.js';

/** Every step of a standalone container (the journal's record is held to these). */
export const StandaloneSteps = [...CommonSteps, 'Creating', 'Created', 'PreStop', 'Stopping', 'Stopped', 'Starting', 'Started', 'RemovingOld'] as const;
type Step = (typeof StandaloneSteps)[number];

/** How many times a rollback is tried when the runtime fails in a way that can heal (other than being away). */
const ROLLBACK_TRIES = 5;

/** Delays between those tries, ms: 0.5 s doubling, at most 8 s. */
const ROLLBACK_RETRY_BACKOFF = { initialMs: 500, maxMs: 8000 };

/**
 * How long a rollback waits for a runtime that is away, at least, ms: the container may be down meanwhile,
 * so this runs past the operation's deadline.
 */
const ROLLBACK_WAIT_MS = 5 * 60_000;

/** How often the replacement is checked while waiting for min-ready. */
const READY_POLL_MS = 100;

/** What the standalone strategy needs. */
export interface StandaloneDeps {
  runtime: Runtime;
  clock: Clock;
  log: Logger;
  /** True once the agent is draining. */
  draining(): boolean;
  /** Aborts when the agent starts draining (cuts waits for the runtime short). */
  drainSignal?: AbortSignal;
  /** This agent's identity, put on its replacements (AGENT_LABEL). */
  agentId?: string;
}

/** Recreates a container through the runtime, rolling back to the old config when the replacement fails. */
export class StandaloneStrategy implements RestartStrategy {
  readonly name = 'standalone' as const;
  readonly steps = StandaloneSteps;

  constructor(private readonly d: StandaloneDeps) {}

  /** Every container the kubelet does not manage is this strategy's (the engine asks the others first). */
  claim(): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** A preStop hook the agent is to run must parse. */
  check(target: PlannedTarget, req: RestartRequest): void {
    if (!req.skipPreStop) preStopCommand(target.current.labels, target.current.annotations);
  }

  /**
   * Moves one container forward from its journaled step until Done; on failure rolls back to the old config.
   * Returns false when the container was rolled back or failed.
   */
  async advance(op: Operation, t: ContainerTarget, ctx: StepContext): Promise<boolean> {
    const rt = this.d.runtime;
    const { deadline, old } = ctx;
    const oldSpec = old?.spec;
    const hook = () => (oldSpec && !op.request.skipPreStop ? preStopCommand(oldSpec.labels, oldSpec.annotations) : undefined);
    let stopBegan: number | undefined;
    try {
      for (;;) {
        switch (t.step as Step) {
          case 'Waiting':
          case 'Creating': {
            // The runtime creates the replacement (an inert, labelled container: nothing is stopped before
            // Stopping is on record) while the record still says Waiting. So an agent that died meanwhile may have
            // left a replacement its record does not show: a resumed operation looks for one first.
            if (t.step === 'Creating' || ctx.resumed) {
              const found = await this.whenAvailable(`look for the replacement of "${t.name}"`, deadline, () => this.findReplacement(op, t));
              if (found) {
                if (t.step === 'Waiting') ctx.mark('Creating');
                t.newId = found;
                ctx.mark('Created');
                break;
              }
            }
            if (!oldSpec) throw new AgentError('FailedPrecondition', `old container ${t.oldId} disappeared before its replacement was created`, { reason: Reasons.Interrupted });
            // Published, not journaled: it reaches the journal with the next intent (Stopping) or the end. A record
            // read back at Waiting is recovered by finding the replacement by its label, so a write here would
            // only compete with the create for the disk and the CPU.
            ctx.mark('Creating');
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
              await ctx.step('Failed');
              return false;
            }
            ctx.mark('Created');
            break;
          }
          case 'Created': {
            if (op.cancelRequested || this.d.clock.now() > deadline) {
              await this.whenAvailable(`remove the replacement of "${t.name}"`, this.d.clock.now() + ROLLBACK_WAIT_MS, () => rt.removeContainer(t.newId));
              t.reason = op.cancelRequested ? Reasons.Cancelled : Reasons.Deadline;
              t.error = op.cancelRequested ? `${Reasons.Cancelled}: cancelled before the old container was stopped` : `${Reasons.Deadline}: ran out of time before the old container was stopped`;
              await ctx.step('RolledBack');
              return false;
            }
            await this.enter(ctx, hook() ? 'PreStop' : 'Stopping');
            break;
          }
          case 'PreStop': {
            const started = this.d.clock.now();
            let grace = op.request.graceSeconds;
            const cmd = hook();
            if (cmd && old?.state === 'running') {
              try {
                const secondsLeft = Math.ceil((deadline - this.d.clock.now()) / 1000);
                const res = await rt.exec(t.oldId, cmd, Math.max(1, Math.min(op.request.graceSeconds, secondsLeft)));
                if (res.exitCode !== 0) this.d.log.warn('preStop hook failed', { op: op.id, container: t.name, reason: Reasons.PreStopHookError, exitCode: res.exitCode, stderr: res.stderr.slice(0, 500) });
              } catch (err) {
                this.d.log.warn('preStop hook failed', { op: op.id, container: t.name, reason: Reasons.PreStopHookError, error: asAgentError(err).message });
              }
              grace = remainingGrace(op.request.graceSeconds, this.d.clock.now() - started);
            }
            await this.enter(ctx, 'Stopping');
            stopBegan = this.d.clock.now();
            await this.whenAvailable(`stop the old container of "${t.name}"`, deadline, () => rt.stopContainer(t.oldId, grace));
            ctx.mark('Stopped');
            break;
          }
          case 'Stopping':
            stopBegan = this.d.clock.now();
            await this.whenAvailable(`stop the old container of "${t.name}"`, deadline, () => rt.stopContainer(t.oldId, op.request.graceSeconds));
            ctx.mark('Stopped');
            break;
          case 'Stopped':
            await this.whenAvailable(`rename the containers of "${t.name}"`, deadline, () => rt.swapNames(this.nameSwap(op, t)));
            // No journal write between stop and start (it would add to the downtime): the Stopping record
            // already stands for "stop, then start", and recovery from it repeats both idempotently.
            ctx.mark('Starting');
            break;
          case 'Starting': {
            await this.whenAvailable(`start the replacement of "${t.name}"`, deadline, () => this.startReplacement(op, t, oldSpec, ctx));
            if (stopBegan !== undefined) t.downtimeMs = this.d.clock.now() - stopBegan;
            ctx.mark('Started');
            break;
          }
          case 'Started':
          case 'Verifying': {
            ctx.verifying(true);
            ctx.mark('Verifying');
            // min-ready 0 asks for no verification window: a start that returned is enough.
            if (op.request.minReadyMs > 0) await this.waitReady(op, t, ctx);
            ctx.verifying(false);
            ctx.mark('Verified');
            break;
          }
          case 'Verified':
          case 'RemovingOld':
            // The replacement runs and is verified: the old container is removed once the operation is reported.
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
      if (err instanceof Paused || err instanceof Unrecorded) throw err;
      const e = asAgentError(err);
      this.d.log.warn('container replacement failed; rolling back', { op: op.id, container: t.name, step: t.step, error: e.message });
      if (!t.error || t.step !== 'RollingBack') {
        t.error = e.message;
        t.reason = e.reason ?? Reasons.ReplacementFailed;
      }
      await this.rollback(op, t, oldSpec, ctx);
      return false;
    }
  }

  /** Whether the old container of a replaced container is still to be removed. */
  pending(t: ContainerTarget): boolean {
    return t.step === 'Verified' || t.step === 'RemovingOld';
  }

  /**
   * Removes the old container of a replaced one, after the operation was reported. RemovingOld is journaled
   * first (the ended operation's record at Verified already owes it); a runtime that is away is waited for.
   */
  async cleanup(op: Operation, t: ContainerTarget, ctx: StepContext): Promise<void> {
    if (!this.pending(t)) return;
    if (t.step !== 'RemovingOld') await this.enter(ctx, 'RemovingOld');
    await this.whenAvailable(`remove the old container of "${t.name}"`, this.d.clock.now() + ROLLBACK_WAIT_MS, async () => {
      try {
        await this.d.runtime.removeContainer(t.oldId);
      } catch (err) {
        if (!AgentError.is(err, 'NotFound')) throw err;
      }
    });
    ctx.mark('Done');
    await ctx.save(false);
  }

  /** Enters a step; Stopping and RemovingOld skip the directory fsync (their recovery repeats idempotent calls). */
  private enter(ctx: StepContext, step: Step): Promise<void> {
    return ctx.step(step, { sync: step !== 'Stopping' && step !== 'RemovingOld' });
  }

  /**
   * Starts the replacement. Resumed after a crash (or once the runtime is back), it may have been started
   * already, or have exited. A start that failed because the runtime was away keeps its kind (Unavailable), so
   * that it is made again once the runtime answers. A replacement whose start was cut short before it ran (the
   * agent was killed mid-call; the runtime says Aborted) is created again, once, and started.
   */
  private async startReplacement(op: Operation, t: ContainerTarget, oldSpec: ContainerSpec | undefined, ctx: StepContext): Promise<void> {
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
          await ctx.save();
          continue;
        }
        const cur = await rt.inspectContainer(t.newId);
        if (cur.state === 'exited') throw this.exitedError(t, cur);
        if (cur.state !== 'running') {
          const e = asAgentError(err);
          throw new AgentError(e.kind, `${Reasons.StartFailed}: replacement for "${t.name}" did not start: ${e.message}`, { cause: err, reason: Reasons.StartFailed });
        }
        return;
      }
    }
  }

  /** A runtime call that waits for a runtime briefly away, until `until`; a drain meanwhile pauses the operation. */
  private whenAvailable<T>(what: string, until: number, call: (attempt: number) => Promise<T>): Promise<T> {
    return pausable(call, { clock: this.d.clock, until, what, log: this.d.log, signal: this.d.drainSignal, draining: this.d.draining });
  }

  /** The old container's spec with the new image and attempt, labelled with this operation. */
  private replacementSpec(op: Operation, t: ContainerTarget, old: ContainerSpec): ContainerSpec {
    const labels: Record<string, string> = { ...old.labels, [OPERATION_LABEL]: op.id };
    if (this.d.agentId) labels[AGENT_LABEL] = this.d.agentId;
    return { ...old, image: t.newImage, attempt: t.newAttempt, labels };
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
   * Waits min-ready, failing as soon as the replacement is seen not running. A cancel ends the wait at once:
   * a replacement running then is kept (the operation ends Cancelled after it), one that is not is rolled back
   * as usual. A runtime that is briefly away says nothing about the replacement: it is looked at again once
   * the runtime answers (until the deadline).
   */
  private async waitReady(op: Operation, t: ContainerTarget, ctx: StepContext): Promise<void> {
    const until = this.d.clock.now() + op.request.minReadyMs;
    let unanswered = 0;
    for (;;) {
      if (op.cancelRequested) {
        if ((await this.d.runtime.containerState(t.newId)) !== 'running') throw this.exitedError(t, await this.d.runtime.inspectContainer(t.newId));
        this.d.log.info('verification cut short by a cancel; the running replacement is kept', { op: op.id, container: t.name });
        ctx.cutShort();
        return;
      }
      if (this.d.clock.now() > ctx.deadline) {
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
  private async rollback(op: Operation, t: ContainerTarget, oldSpec: ContainerSpec | undefined, ctx: StepContext): Promise<void> {
    await ctx.step('RollingBack');
    // The container may be down: a runtime that is away is waited for, past the operation's deadline if need be.
    const until = Math.max(ctx.deadline, this.d.clock.now() + ROLLBACK_WAIT_MS);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.whenAvailable(`roll back "${t.name}"`, until, () => this.rollbackOnce(op, t, oldSpec));
        await ctx.step('RolledBack');
        this.d.log.info('rolled back', { op: op.id, container: t.name, running: t.rollbackId });
        return;
      } catch (err) {
        if (err instanceof Paused || err instanceof Unrecorded) throw err;
        const e = asAgentError(err);
        // Other failures that can heal are tried again a few times (a runtime that stayed away was waited for).
        if (attempt < ROLLBACK_TRIES && !isTransient(e) && e.kind !== 'NotFound' && e.kind !== 'InvalidArgument' && e.kind !== 'FailedPrecondition') {
          this.d.log.warn('rollback step failed; retrying', { op: op.id, container: t.name, attempt, error: e.message });
          await this.d.clock.sleep(backoffDelay(attempt, ROLLBACK_RETRY_BACKOFF));
          continue;
        }
        t.reason = Reasons.RollbackFailed;
        t.error = `${t.error ?? 'replacement failed'}; ${Reasons.RollbackFailed}: ${e.message}; container "${t.name}" may need manual attention`;
        await ctx.step('Failed');
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
