// The standalone strategy's replacement container, through the runtime: its spec (the old container's, with the
// new image and this operation's label), its temporary name where names are unique keys (Docker), finding one an
// agent that died left behind, starting it, and verifying that it stays up for min-ready.
import { AgentError, asAgentError } from '../errors.js';
import type { NameSwap } from '../runtime/runtime.js';
import type { ContainerDetail, ContainerSpec } from '../runtime/types.js';
import type { ContainerTarget, Operation } from './operation.js';
import { Paused } from './paused.js';
import { Reasons } from './reasons.js';
import { AGENT_LABEL, OPERATION_LABEL } from './restart-plan.js';
import type { StepContext } from './restart-strategy.js';
import { isTransient, retryDelay } from './runtime-wait.js';
import type { StandaloneDeps } from './standalone-deps.js';

/** How often the replacement is checked while waiting for min-ready. */
const READY_POLL_MS = 100;

/** The replacement containers of the standalone strategy. */
export class Replacements {
  constructor(private readonly d: StandaloneDeps) {}

  /** The old container's spec with the new image and attempt, labelled with this operation. */
  spec(op: Operation, t: ContainerTarget, old: ContainerSpec): ContainerSpec {
    const labels: Record<string, string> = { ...old.labels, [OPERATION_LABEL]: op.id };
    if (this.d.agentId) labels[AGENT_LABEL] = this.d.agentId;
    return { ...old, image: t.newImage, attempt: t.newAttempt, labels };
  }

  /** The replacement's name while the old container still holds its own, where names are unique keys (Docker). */
  tempName(op: Operation, t: ContainerTarget): string | undefined {
    return this.d.runtime.replacementName(t.oldRuntimeName, op.id.slice(0, 8));
  }

  /** The names the old container and its replacement swap between stop and start (and back on rollback). */
  nameSwap(op: Operation, t: ContainerTarget): NameSwap {
    return { oldId: t.oldId, newId: t.newId, name: t.oldRuntimeName, tag: op.id.slice(0, 8) };
  }

  /** A replacement this operation created before the agent died, found by its label. */
  async find(op: Operation, t: ContainerTarget): Promise<string | undefined> {
    // Every container, not the pod's: on Docker a pod of one's replacement is a pod of its own.
    const all = await this.d.runtime.listContainers();
    const mine = all.filter((c) => c.labels[OPERATION_LABEL] === op.id && c.id !== t.oldId && (c.name === t.name || c.runtimeName === this.tempName(op, t)));
    return mine.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())[0]?.id;
  }

  /**
   * Starts the replacement. Resumed after a crash (or once the runtime is back), it may have been started
   * already, or have exited. A start that failed because the runtime was away keeps its kind (Unavailable), so
   * that it is made again once the runtime answers. A replacement whose start was cut short before it ran (the
   * agent was killed mid-call; the runtime says Aborted) is created again, once, and started.
   */
  async start(op: Operation, t: ContainerTarget, oldSpec: ContainerSpec | undefined, ctx: StepContext): Promise<void> {
    const rt = this.d.runtime;
    for (let recreated = false; ; recreated = true) {
      try {
        await rt.startContainer(t.newId);
        return;
      } catch (err) {
        if (AgentError.is(err, 'Aborted') && !recreated && oldSpec) {
          this.d.log.warn('the replacement never ran: its start was cut short; creating it again', { op: op.id, container: t.name, error: err.message });
          await rt.removeContainer(t.newId);
          t.newId = await rt.createContainer(op.podId, this.spec(op, t, oldSpec), this.tempName(op, t));
          await ctx.save();
          continue;
        }
        const cur = await rt.inspectContainer(t.newId);
        if (cur.state === 'exited') throw exitedError(t, cur);
        if (cur.state !== 'running') {
          const e = asAgentError(err);
          throw new AgentError(e.kind, `${Reasons.StartFailed}: replacement for "${t.name}" did not start: ${e.message}`, { cause: err, reason: Reasons.StartFailed });
        }
        return;
      }
    }
  }

  /**
   * Waits min-ready, failing as soon as the replacement is seen not running. A cancel ends the wait at once:
   * a replacement running then is kept (the operation ends Cancelled after it), one that is not is rolled back
   * as usual. A runtime that is briefly away says nothing about the replacement: it is looked at again once
   * the runtime answers (until the deadline).
   */
  async waitReady(op: Operation, t: ContainerTarget, ctx: StepContext): Promise<void> {
    const until = this.d.clock.now() + op.request.minReadyMs;
    let unanswered = 0;
    for (;;) {
      if (op.cancelRequested) {
        if ((await this.d.runtime.containerState(t.newId)) !== 'running') throw exitedError(t, await this.d.runtime.inspectContainer(t.newId));
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
          if ((await this.d.runtime.containerState(t.newId)) !== 'running') throw exitedError(t, await this.d.runtime.inspectContainer(t.newId));
        } else {
          // A replacement its restart policy brought back (Docker) looks running between crashes: it is not ready.
          const cur = await this.d.runtime.inspectContainer(t.newId);
          if (cur.state !== 'running' || (cur.restartCount ?? 0) > 0) throw exitedError(t, cur);
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
}

/** The error of a replacement that exited (or crash-loops), with its exit code kept on the target. */
function exitedError(t: ContainerTarget, cur: ContainerDetail): AgentError {
  t.exitCode = cur.exitCode;
  const why = (cur.reason ? `, reason ${cur.reason}` : '') + (cur.restartCount ? `, restarted ${cur.restartCount} times by its restart policy` : '');
  const state = cur.state === 'running' ? 'crash-looping' : cur.state;
  return new AgentError('Aborted', `${Reasons.ExitedEarly}: replacement for "${t.name}" (image ${t.newImage}) is ${state} with exit code ${cur.exitCode ?? 'unknown'}${why}`, { reason: Reasons.ExitedEarly });
}
