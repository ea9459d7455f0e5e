// The progress lines of `inplacectl restart` and `watch`: every step the agent journaled, printed once and in
// the order it happened, timed from the operation's creation. Each view of the operation carries its whole
// step history, so a view that arrives late (two steps journaled between two updates, or a watch that joins
// an operation already under way) loses nothing: the steps not printed yet are printed from the history.
import { formatBytes } from '../bytes.js';
import { formatDuration } from '../duration.js';
import type { ContainerView, OperationView } from '../api/convert.js';
import { isFinishedState, type OperationStateName, type StepName } from '../api/operation-states.js';

/** How a container step reads in progress lines and `get`. */
const STEP_TEXT: Record<StepName, string> = {
  Waiting: 'waiting',
  Creating: 'creating',
  Created: 'created',
  PreStop: 'running the preStop hook',
  Stopping: 'stopping the old container',
  Stopped: 'old container stopped',
  Starting: 'starting',
  Started: 'started',
  Verifying: 'verifying',
  Verified: 'verified',
  RemovingOld: 'removing the old container',
  Done: 'done',
  RollingBack: 'rolling back',
  RolledBack: 'rolled back',
  Failed: 'failed',
  Draining: 'draining (leaving the endpoints)',
  Patching: 'patching the pod',
  Patched: 'pod patched',
};

/** How an operation state reads in progress lines and `get`. */
const STATE_TEXT: Record<OperationStateName, string> = {
  Pending: 'pending',
  Pulling: 'pulling images',
  Recreating: 'recreating',
  Verifying: 'verifying',
  Succeeded: 'succeeded',
  Failed: 'failed',
  RolledBack: 'rolled back',
  Cancelled: 'cancelled',
};

/** A container step in words (`RemovingOld` reads "removing the old container"). */
export function stepText(step: StepName): string {
  return STEP_TEXT[step] ?? String(step);
}

/** An operation state in words (`RolledBack` reads "rolled back"). */
export function stateText(state: OperationStateName): string {
  return STATE_TEXT[state] ?? String(state);
}

const at = (op: OperationView, iso: string) => formatDuration(Math.max(0, Date.parse(iso) - Date.parse(op.createdAt))).padStart(7);

/**
 * What the min-ready wait of a container came to, when a cancel cut it short: the agent journals Verified
 * either way, so the time between Verifying and Verified, against the min-ready asked for, tells.
 */
export function cutShortNote(op: OperationView, c: ContainerView): string | undefined {
  const minReady = op.applied.minReadyMs ?? 0;
  if (!op.cancelRequested || minReady <= 0) return undefined;
  const began = c.steps.find((s) => s.step === 'Verifying');
  const ended = c.steps.find((s) => s.step === 'Verified');
  if (!began || !ended) return undefined;
  const waited = Date.parse(ended.at) - Date.parse(began.at);
  if (waited >= minReady) return undefined;
  return `verification cut short by the cancel after ${formatDuration(waited)} of the ${formatDuration(minReady)} min-ready; the running replacement is kept`;
}

/** The words after a container's name for one step. */
function stepLine(op: OperationView, c: ContainerView, step: StepName): string {
  switch (step) {
    case 'Created':
      return `created ${(c.newId ?? '').slice(0, 12)} (${c.newImage})`;
    case 'Verifying': {
      const ms = op.applied.minReadyMs;
      return ms ? `verifying (must keep running ${formatDuration(ms)})` : 'verifying';
    }
    case 'Verified':
      return cutShortNote(op, c) ?? 'verified';
    case 'RolledBack':
    case 'Failed':
      return `${stepText(step)}${c.error ? `: ${c.error}` : ''}`;
    default:
      return stepText(step);
  }
}

/** Turns successive views of one operation into progress lines; keeps what it has printed. */
export class ProgressPrinter {
  private readonly printedSteps = new Map<string, number>();
  private state: OperationStateName | undefined;
  private recreatingShown = false;
  private readonly pulls = new Map<string, { done: boolean; bytesDone: number }>();

  /**
   * The header for a watch that joined op under way (undefined when it joined before anything happened):
   * the steps printed next are replayed from the journal.
   */
  static joinHeader(op: OperationView): string | undefined {
    const happened = op.containers.some((c) => c.steps.some((s) => s.step !== 'Waiting')) || op.state !== 'Pending';
    if (!happened) return undefined;
    return `operation ${op.id} on pod ${op.podName}, ${stateText(op.state)} when this watch joined; what happened before is replayed from its record:`;
  }

  /** The lines for whatever op holds that was not printed yet, in the order it happened. */
  next(op: OperationView): string[] {
    const out: string[] = [];
    let last: string | undefined;
    // New steps of every container, merged by the time they were journaled (containers run one at a time).
    const fresh: { t: number; i: number; line: string }[] = [];
    op.containers.forEach((c, ci) => {
      const from = this.printedSteps.get(c.name) ?? 0;
      c.steps.slice(from).forEach((s, k) => {
        if (s.step === 'Waiting') return;
        fresh.push({ t: Date.parse(s.at), i: ci * 1000 + from + k, line: `${at(op, s.at)}    ${c.name}: ${stepLine(op, c, s.step)}` });
      });
      this.printedSteps.set(c.name, c.steps.length);
    });
    fresh.sort((a, b) => a.t - b.t || a.i - b.i);
    if (op.state !== this.state) {
      const backFromVerify = this.state === 'Verifying' && op.state === 'Recreating';
      const repeat = op.state === 'Recreating' && this.recreatingShown;
      // Verifying is a container's step, printed with that container.
      if (!backFromVerify && !repeat && op.state !== 'Verifying') {
        // An end is printed after the steps that led to it, at its finish; any other state before the steps it
        // began, no later than the first of them (the record's updatedAt is its last write, not the state's start).
        if (isFinishedState(op.state)) last = `${at(op, op.finishedAt || op.updatedAt)}  ${stateText(op.state)}`;
        else {
          const began = Math.min(Date.parse(op.updatedAt), fresh[0]?.t ?? Infinity);
          out.push(`${at(op, new Date(began).toISOString())}  ${stateText(op.state)}`);
        }
      }
      if (op.state === 'Recreating') this.recreatingShown = true;
      this.state = op.state;
    }
    for (const p of op.pulls ?? []) {
      const before = this.pulls.get(p.image);
      if (before && before.done === p.done && before.bytesDone === p.bytesDone) continue;
      this.pulls.set(p.image, { done: p.done, bytesDone: p.bytesDone });
      if (p.done) out.push(`${at(op, op.updatedAt)}    ${p.image}: ${p.pulled ? `pulled${p.bytesTotal ? ` (${formatBytes(p.bytesTotal)})` : ''}` : 'present'}`);
      else if (p.bytesDone > 0) out.push(`${at(op, op.updatedAt)}    ${p.image}: ${formatBytes(p.bytesDone)}${p.bytesTotal ? ` / ${formatBytes(p.bytesTotal)}` : ''}`);
    }
    out.push(...fresh.map((f) => f.line));
    if (last) out.push(last);
    return out;
  }
}
