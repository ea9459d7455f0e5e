// The standalone strategy's rollback: the replacement removed and the old config running again (the old
// container started again where the runtime restarts stopped containers; elsewhere a new one created from its
// config), tried again while the runtime fails in a way that can heal. Every call is safe to repeat after a crash.
import { AgentError, asAgentError } from '../errors.js';
import { backoffDelay } from '../backoff.js';
import type { ContainerDetail, ContainerSpec } from '../runtime/types.js';
import type { ContainerTarget, Operation } from './operation.js';
import { Paused, Unrecorded, whenAvailable } from './paused.js';
import { Reasons } from './reasons.js';
import { OPERATION_LABEL } from './restart-plan.js';
import type { StepContext } from './restart-strategy.js';
import { isTransient } from './runtime-wait.js';
import type { Replacements } from './standalone-replacements.js';
import type { StandaloneDeps } from './standalone-deps.js';

/** How many times a rollback is tried when the runtime fails in a way that can heal (other than being away). */
const ROLLBACK_TRIES = 5;

/** Delays between those tries, ms: 0.5 s doubling, at most 8 s. */
const ROLLBACK_RETRY_BACKOFF = { initialMs: 500, maxMs: 8000 };

/**
 * How long a rollback waits for a runtime that is away, at least, ms: the container may be down meanwhile,
 * so this runs past the operation's deadline.
 */
export const ROLLBACK_WAIT_MS = 5 * 60_000;

/** Brings a standalone container's old config back. */
export class StandaloneRollback {
  constructor(
    private readonly d: StandaloneDeps,
    private readonly replacements: Replacements,
  ) {}

  /**
   * Brings the old config back: removes the replacement and runs the old container again. Ends the container
   * RolledBack, or Failed (RollbackFailed) when the runtime keeps failing.
   */
  async run(op: Operation, t: ContainerTarget, oldSpec: ContainerSpec | undefined, ctx: StepContext): Promise<void> {
    await ctx.step('RollingBack');
    // The container may be down: a runtime that is away is waited for, past the operation's deadline if need be.
    const until = Math.max(ctx.deadline, this.d.clock.now() + ROLLBACK_WAIT_MS);
    for (let attempt = 1; ; attempt++) {
      try {
        await whenAvailable(this.d)(`roll back "${t.name}"`, until, () => this.once(op, t, oldSpec));
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
  private async once(op: Operation, t: ContainerTarget, oldSpec: ContainerSpec | undefined): Promise<void> {
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
    await rt.restoreNames(this.replacements.nameSwap(op, t));
    if (t.newId) await rt.removeContainer(t.newId);
    if (old?.state === 'running') {
      t.rollbackId = t.oldId;
    } else if (rt.capabilities.restartsStopped && old) {
      await rt.startContainer(t.oldId);
      t.rollbackId = t.oldId;
    } else {
      await this.runAgain(op, t, oldSpec ?? old?.spec);
    }
  }

  /** A new instance from the old config (CRI: a container runs once); after a crash it may exist already (the old one then gone). */
  private async runAgain(op: Operation, t: ContainerTarget, spec: ContainerSpec | undefined): Promise<void> {
    const rt = this.d.runtime;
    let again = await this.findRollback(op, t);
    if (again && !['created', 'running'].includes(await rt.containerState(again))) {
      // An earlier try created it but its start failed: that instance cannot start again (CRI).
      await rt.removeContainer(again);
      again = undefined;
    }
    if (!again) {
      if (!spec) throw new AgentError('FailedPrecondition', `old container ${t.oldId} is gone and its config with it`);
      again = await rt.createContainer(op.podId, { ...spec, attempt: t.newAttempt + 1, labels: { ...spec.labels, [OPERATION_LABEL]: op.id } });
    }
    t.rollbackId = again;
    if ((await rt.containerState(again)) === 'created') await rt.startContainer(again);
    await rt.removeContainer(t.oldId);
  }

  private async findRollback(op: Operation, t: ContainerTarget): Promise<string | undefined> {
    const all = await this.d.runtime.listContainers({ podId: op.podId });
    return all.find((c) => c.labels[OPERATION_LABEL] === op.id && c.name === t.name && c.attempt === t.newAttempt + 1)?.id;
  }
}
