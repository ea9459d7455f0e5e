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
import type { ContainerSpec } from '../runtime/types.js';
import { CommonSteps, type ContainerTarget, type Operation, type RestartRequest } from './operation.js';
import { Paused, Unrecorded, whenAvailable, type WhenAvailable } from './paused.js';
import { preStopCommand, remainingGrace, type PlannedTarget } from './restart-plan.js';
import { Reasons } from './reasons.js';
import type { RestartStrategy, StepContext } from './restart-strategy.js';
import type { StandaloneDeps } from './standalone-deps.js';
import { Replacements } from './standalone-replacements.js';
import { ROLLBACK_WAIT_MS, StandaloneRollback } from './standalone-rollback.js';

/** Every step of a standalone container (the journal's record is held to these). */
export const StandaloneSteps = [...CommonSteps, 'Creating', 'Created', 'PreStop', 'Stopping', 'Stopped', 'Starting', 'Started', 'RemovingOld'] as const;
type Step = (typeof StandaloneSteps)[number];

/** What one advance() carries from step to step. */
interface Turn {
  op: Operation;
  t: ContainerTarget;
  ctx: StepContext;
  /** The old container's creation config, when it was read. */
  oldSpec?: ContainerSpec;
  /** When the old container's stop began, in this agent (the downtime runs from it). */
  stopBegan?: number;
}

/** One step's work: undefined to go on from the step it left the container at, else advance()'s answer. */
type StepWork = (turn: Turn) => Promise<boolean | undefined>;

/** Recreates a container through the runtime, rolling back to the old config when the replacement fails. */
export class StandaloneStrategy implements RestartStrategy {
  readonly name = 'standalone' as const;
  readonly steps = StandaloneSteps;
  private readonly replacements: Replacements;
  private readonly rollback: StandaloneRollback;
  /** A runtime call that waits for a runtime briefly away; a drain meanwhile pauses the operation. */
  private readonly whenAvailable: WhenAvailable;

  /** The work of each step, the state machine above as a table. */
  private readonly work: Record<Step, StepWork> = {
    Waiting: (x) => this.create(x),
    Creating: (x) => this.create(x),
    Created: (x) => this.created(x),
    PreStop: (x) => this.preStop(x),
    Stopping: (x) => this.stop(x, x.op.request.graceSeconds),
    Stopped: (x) => this.swapNames(x),
    Starting: (x) => this.start(x),
    Started: (x) => this.verify(x),
    Verifying: (x) => this.verify(x),
    // The replacement runs and is verified: the old container is removed once the operation is reported.
    Verified: async () => true,
    RemovingOld: async () => true,
    RollingBack: (x) => Promise.reject(new AgentError('Aborted', x.t.error ?? 'rollback was interrupted; resuming it')),
    Done: async () => true,
    RolledBack: async () => false,
    Failed: async () => false,
  };

  constructor(private readonly d: StandaloneDeps) {
    this.replacements = new Replacements(d);
    this.rollback = new StandaloneRollback(d, this.replacements);
    this.whenAvailable = whenAvailable(d);
  }

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
    const turn: Turn = { op, t, ctx, oldSpec: ctx.old?.spec };
    try {
      for (;;) {
        const answer = await this.work[t.step as Step](turn);
        if (answer !== undefined) return answer;
      }
    } catch (err) {
      if (err instanceof Paused || err instanceof Unrecorded) throw err;
      const e = asAgentError(err);
      this.d.log.warn('container replacement failed; rolling back', { op: op.id, container: t.name, step: t.step, error: e.message });
      if (!t.error || t.step !== 'RollingBack') {
        t.error = e.message;
        t.reason = e.reason ?? Reasons.ReplacementFailed;
      }
      await this.rollback.run(op, t, turn.oldSpec, ctx);
      return false;
    }
  }

  /**
   * Waiting, Creating: the runtime creates the replacement (an inert, labelled container: nothing is stopped
   * before Stopping is on record) while the record still says Waiting. So an agent that died meanwhile may have
   * left a replacement its record does not show: a resumed operation looks for one first.
   */
  private async create({ op, t, ctx, oldSpec }: Turn): Promise<boolean | undefined> {
    const rt = this.d.runtime;
    if (t.step === 'Creating' || ctx.resumed) {
      const found = await this.whenAvailable(`look for the replacement of "${t.name}"`, ctx.deadline, () => this.replacements.find(op, t));
      if (found) {
        if (t.step === 'Waiting') ctx.mark('Creating');
        t.newId = found;
        ctx.mark('Created');
        return undefined;
      }
    }
    if (!oldSpec) throw new AgentError('FailedPrecondition', `old container ${t.oldId} disappeared before its replacement was created`, { reason: Reasons.Interrupted });
    // Published, not journaled: it reaches the journal with the next intent (Stopping) or the end. A record
    // read back at Waiting is recovered by finding the replacement by its label, so a write here would
    // only compete with the create for the disk and the CPU.
    ctx.mark('Creating');
    const spec = this.replacements.spec(op, t, oldSpec);
    try {
      // A create the runtime carried out before it went away is found, not made twice.
      t.newId = await this.whenAvailable(`create the replacement of "${t.name}"`, ctx.deadline, async (attempt) => {
        const found = attempt > 1 ? await this.replacements.find(op, t) : undefined;
        return found ?? (await rt.createContainer(op.podId, spec, this.replacements.tempName(op, t)));
      });
    } catch (err) {
      if (err instanceof Paused) throw err;
      const e = asAgentError(err);
      // Nothing was stopped: the old container still runs. A create that failed on our side (a
      // deadline) may still have happened in the runtime: remove what it left.
      const stray = await this.replacements.find(op, t).catch(() => undefined);
      if (stray) await rt.removeContainer(stray).catch(() => undefined);
      t.reason = Reasons.CreateFailed;
      t.error = `${Reasons.CreateFailed}: ${e.message}`;
      await ctx.step('Failed');
      return false;
    }
    ctx.mark('Created');
    return undefined;
  }

  /** Created: the replacement is discarded when cancelled or out of time (nothing was stopped), else the stop begins. */
  private async created({ op, t, ctx, oldSpec }: Turn): Promise<boolean | undefined> {
    if (op.cancelRequested || this.d.clock.now() > ctx.deadline) {
      await this.whenAvailable(`remove the replacement of "${t.name}"`, this.d.clock.now() + ROLLBACK_WAIT_MS, () => this.d.runtime.removeContainer(t.newId));
      t.reason = op.cancelRequested ? Reasons.Cancelled : Reasons.Deadline;
      t.error = op.cancelRequested ? `${Reasons.Cancelled}: cancelled before the old container was stopped` : `${Reasons.Deadline}: ran out of time before the old container was stopped`;
      await ctx.step('RolledBack');
      return false;
    }
    await this.enter(ctx, this.preStopHook(op, oldSpec) ? 'PreStop' : 'Stopping');
    return undefined;
  }

  /** PreStop: the hook runs in the old container, its time taken out of the grace period; then the stop. */
  private async preStop(x: Turn): Promise<boolean | undefined> {
    const { op, t, ctx } = x;
    const started = this.d.clock.now();
    let grace = op.request.graceSeconds;
    const cmd = this.preStopHook(op, x.oldSpec);
    if (cmd && ctx.old?.state === 'running') {
      try {
        const secondsLeft = Math.ceil((ctx.deadline - this.d.clock.now()) / 1000);
        const res = await this.d.runtime.exec(t.oldId, cmd, Math.max(1, Math.min(op.request.graceSeconds, secondsLeft)));
        if (res.exitCode !== 0) this.d.log.warn('preStop hook failed', { op: op.id, container: t.name, reason: Reasons.PreStopHookError, exitCode: res.exitCode, stderr: res.stderr.slice(0, 500) });
      } catch (err) {
        this.d.log.warn('preStop hook failed', { op: op.id, container: t.name, reason: Reasons.PreStopHookError, error: asAgentError(err).message });
      }
      grace = remainingGrace(op.request.graceSeconds, this.d.clock.now() - started);
    }
    await this.enter(ctx, 'Stopping');
    return this.stop(x, grace);
  }

  /** Stopping: the old container is stopped with grace seconds. */
  private async stop(x: Turn, grace: number): Promise<undefined> {
    x.stopBegan = this.d.clock.now();
    await this.whenAvailable(`stop the old container of "${x.t.name}"`, x.ctx.deadline, () => this.d.runtime.stopContainer(x.t.oldId, grace));
    x.ctx.mark('Stopped');
    return undefined;
  }

  /** Stopped: the names are swapped (Docker), then the start. */
  private async swapNames({ op, t, ctx }: Turn): Promise<undefined> {
    await this.whenAvailable(`rename the containers of "${t.name}"`, ctx.deadline, () => this.d.runtime.swapNames(this.replacements.nameSwap(op, t)));
    // No journal write between stop and start (it would add to the downtime): the Stopping record
    // already stands for "stop, then start", and recovery from it repeats both idempotently.
    ctx.mark('Starting');
    return undefined;
  }

  /** Starting: the replacement is started, and the downtime taken. */
  private async start({ op, t, ctx, oldSpec, stopBegan }: Turn): Promise<undefined> {
    await this.whenAvailable(`start the replacement of "${t.name}"`, ctx.deadline, () => this.replacements.start(op, t, oldSpec, ctx));
    if (stopBegan !== undefined) t.downtimeMs = this.d.clock.now() - stopBegan;
    ctx.mark('Started');
    return undefined;
  }

  /** Started, Verifying: the replacement must stay up min-ready (0 asks for no window: a start that returned is enough). */
  private async verify({ op, t, ctx }: Turn): Promise<undefined> {
    ctx.verifying(true);
    ctx.mark('Verifying');
    if (op.request.minReadyMs > 0) await this.replacements.waitReady(op, t, ctx);
    ctx.verifying(false);
    ctx.mark('Verified');
    return undefined;
  }

  /** The preStop hook the agent runs in the old container, unless the request skips it. */
  private preStopHook(op: Operation, oldSpec: ContainerSpec | undefined): string[] | undefined {
    return oldSpec && !op.request.skipPreStop ? preStopCommand(oldSpec.labels, oldSpec.annotations) : undefined;
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
}
