// The Pulling state of an operation: every new image the operation needs is made present, all at once (the
// pull service bounds the node's concurrency), before anything is stopped.
import { AgentError, asAgentError } from '../errors.js';
import { MAX_TIMER_MS } from '../duration.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { ImagePuller } from './image-puller.js';
import type { ContainerTarget, Operation } from './operation.js';
import { Paused } from './paused.js';
import { Reasons } from './reasons.js';
import { pullFailureCause } from './image-puller.js';

/** Least time between two published pull-progress updates of one operation. */
const PULL_PUBLISH_MS = 500;

/** What pulling an operation's images needs. */
export interface ImagePullsDeps {
  puller: ImagePuller;
  clock: Clock;
  log: Logger;
  /** Publishes a change of the record (progress) without journaling it. */
  publish(op: Operation): void;
  /** True once the agent is draining. */
  draining(): boolean;
  /** Signals that cut the pulls short (the agent's drain, the operation's cancel). */
  signals: AbortSignal[];
  /** Told as each container's new image begins to be made present (the strategy's pulling hook). */
  pulling(t: ContainerTarget, result: Promise<{ pulled: boolean }>): void;
  /** Told once, as the first image of the operation is found missing and its download reports progress. */
  downloading?(): void;
}

/**
 * Makes every new image of op present, recording progress in op.pulls. Fails (reason ImagePullFailed, or
 * Cancelled) with nothing stopped; throws Paused when the agent drains meanwhile.
 */
export async function pullImages(op: Operation, deadline: number, d: ImagePullsDeps): Promise<void> {
  // A container that keeps its image runs it already. (Were the image record gone, the create would fail
  // before anything is stopped.)
  const images = [...new Set(op.containers.filter((c) => c.step === 'Waiting' && c.newImage !== c.oldImage).map((c) => c.newImage))];
  const abort = new AbortController();
  // The operation's deadline, on the injected clock; stopped when the pulls end.
  const stopTimer = new AbortController();
  d.clock.sleep(Math.min(MAX_TIMER_MS, Math.max(1, deadline - d.clock.now())), stopTimer.signal).then(
    () => abort.abort(new AgentError('DeadlineExceeded', 'operation deadline')),
    () => undefined,
  );
  op.pulls = images.map((image) => ({ image, bytesDone: 0, bytesTotal: 0, done: false, pulled: false }));
  let lastPublish = 0;
  let downloading = false;
  const signal = AbortSignal.any([abort.signal, ...d.signals]);
  try {
    await Promise.all(
      op.pulls.map(async (p) => {
        try {
          const ensured = d.puller.ensure(p.image, {
            signal,
            onProgress: (pr) => {
              if (!downloading) {
                downloading = true;
                d.downloading?.();
              }
              p.bytesDone = pr.bytesDone;
              p.bytesTotal = pr.bytesTotal;
              if (d.clock.now() - lastPublish >= PULL_PUBLISH_MS) {
                lastPublish = d.clock.now();
                d.publish(op);
              }
            },
          });
          for (const t of op.containers) if (t.step === 'Waiting' && t.newImage === p.image) d.pulling(t, ensured);
          const got = await ensured;
          p.done = true;
          p.pulled = got.pulled;
          d.publish(op);
          d.log.info('image ready', { op: op.id, image: p.image, pulled: got.pulled, digest: got.digest });
        } catch (err) {
          if (d.draining()) throw new Paused();
          const e = asAgentError(err);
          abort.abort(e);
          if (op.cancelRequested) throw new AgentError('Cancelled', `operation ${op.id} was cancelled while pulling ${p.image}; nothing was stopped`, { reason: Reasons.Cancelled });
          // A pull the operation's deadline cut short failed for want of time, whatever the pull says.
          if (d.clock.now() >= deadline) throw new AgentError('DeadlineExceeded', `image "${p.image}" was not present before the operation's deadline: ${pullFailureCause(e, p.image)}; nothing was stopped`, { cause: err, reason: Reasons.Deadline });
          // One sentence: the subject once, then the cause; the reason is a field of its own.
          throw new AgentError(e.kind === 'Cancelled' ? 'DeadlineExceeded' : e.kind, `image "${p.image}" could not be pulled: ${pullFailureCause(e, p.image)}; nothing was stopped`, { cause: err, reason: Reasons.PullFailed });
        }
      }),
    );
  } finally {
    stopTimer.abort();
  }
}
