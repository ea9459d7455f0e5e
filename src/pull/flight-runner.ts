// One flight of the pull service, driven to Done or Failed (steps 3a-3d of pull-service.ts): an image already
// present is Done; otherwise a node-wide slot, the disk guard, the attempts with retries and backoff under the
// overall and stall deadlines, and the digest of what the runtime stored checked against the reference.
import { formatBytes } from '../bytes.js';
import type { Backoff } from '../backoff.js';
import type { Clock } from '../clock.js';
import { formatDuration } from '../duration.js';
import { AgentError, asAgentError } from '../errors.js';
import type { ImageRef } from '../image-ref.js';
import type { Logger } from '../log.js';
import type { ProgressSource } from '../runtime/progress-source.js';
import type { Runtime } from '../runtime/runtime.js';
import type { PulledImage, PullProgress, RegistryAuth } from '../runtime/types.js';
import { repoDigestOf, type LooksAhead } from './present-images.js';
import { classifyPullError, isRetryable } from './pull-errors.js';
import type { PullFlight } from './pull-flight.js';
import type { PullMetrics } from './pull-metrics.js';
import type { PullQueue } from './pull-queue.js';
import { StallWatch } from './stall-watch.js';

/** What a flight pulls with; part of its key, so every caller of a flight asked for exactly this. */
export interface FlightParams {
  auth?: RegistryAuth;
  always: boolean;
}

/** What driving a flight needs: the service's runtime, queue, limits and metrics. */
export interface FlightRunnerDeps {
  runtime: Runtime;
  /** The node-wide FIFO limit of pulls. */
  queue: PullQueue;
  looks: LooksAhead;
  clock: Clock;
  log: Logger;
  metrics: PullMetrics;
  backoff: Backoff;
  /** Retries after the first attempt for errors that can heal. */
  retries: number;
  /** Overall deadline of one pull from leaving the queue, ms. */
  timeoutMs: number;
  /** An attempt with no new bytes this long fails, ms (0: off). */
  stallTimeoutMs: number;
  /** The free-space floor of the image filesystem, bytes (0: no check). */
  minFreeDiskBytes: number;
  /** Byte progress for runtimes whose pull reports none. */
  progressSource?: ProgressSource;
}

/** Drives flights. */
export class FlightRunner {
  constructor(private readonly d: FlightRunnerDeps) {}

  /** Drives one flight to Done or Failed (steps 3a-3d). */
  async run(flight: PullFlight, ref: ImageRef, params: FlightParams): Promise<void> {
    const image = ref.original.trim();
    try {
      // Let the first caller attach before anything is sent.
      await Promise.resolve();
      if (!params.always) {
        const present = await this.d.looks.take(ref);
        flight.signal.throwIfAborted();
        if (present) {
          flight.succeed({ alreadyPresent: true, imageId: present.id, digest: repoDigestOf(ref, present) });
          this.d.metrics.pulls.inc({ result: 'present' });
          return;
        }
      }
      const release = await this.d.queue.acquire(flight.signal, (queuePosition) => flight.update({ phase: 'Queued', queuePosition }));
      const started = this.d.clock.now();
      try {
        flight.update({ phase: 'Pulling', queuePosition: 0 });
        await this.checkDisk(image);
        flight.signal.throwIfAborted();
      } catch (err) {
        release();
        throw err;
      }
      // From here on the pull reaches the runtime: only such pulls count as in progress and have a duration.
      this.d.metrics.inProgress.inc();
      try {
        const pulled = await this.attempts(flight, ref, params);
        const digest = await this.verifiedDigest(ref, pulled);
        flight.succeed({ imageId: pulled.id, digest });
        this.d.metrics.pulls.inc({ result: 'pulled' });
        this.d.metrics.duration.observe({ result: 'pulled' }, (this.d.clock.now() - started) / 1000);
        if (flight.state.bytesTotal > 0) this.d.metrics.bytes.observe(flight.state.bytesTotal);
        this.d.log.info('pulled image', { image, digest, bytes: flight.state.bytesTotal, ms: this.d.clock.now() - started, attempts: flight.state.attempt });
      } catch (err) {
        const e = classifyPullError(err, image, params.auth);
        const result = e.kind === 'Cancelled' ? 'cancelled' : 'failed';
        this.d.metrics.duration.observe({ result }, (this.d.clock.now() - started) / 1000);
        throw e;
      } finally {
        release();
        this.d.metrics.inProgress.dec();
      }
    } catch (err) {
      const e = classifyPullError(err, image, params.auth);
      if (e.kind === 'Cancelled') this.d.metrics.pulls.inc({ result: 'cancelled' });
      else this.d.metrics.pulls.inc({ result: 'failed' });
      this.d.log.warn('image pull failed', { image, kind: e.kind, error: e.message, attempts: flight.state.attempt });
      flight.fail(e);
    }
  }

  /** Attempts with retries and backoff under the overall deadline (step 3c). */
  private async attempts(flight: PullFlight, ref: ImageRef, params: FlightParams): Promise<PulledImage> {
    const image = ref.original.trim();
    const overall = new AbortController();
    const stopTimer = new AbortController();
    const onFlightAbort = () => overall.abort(flight.signal.reason);
    flight.signal.addEventListener('abort', onFlightAbort, { once: true });
    if (flight.signal.aborted) onFlightAbort();
    const deadline = this.d.clock.now() + this.d.timeoutMs;
    this.d.clock.sleep(this.d.timeoutMs, stopTimer.signal).then(
      () => overall.abort(new AgentError('DeadlineExceeded', `pull of ${image} did not finish within ${formatDuration(this.d.timeoutMs)} (--pull-timeout)`)),
      () => undefined,
    );
    try {
      for (let attempt = 1; ; attempt++) {
        flight.update({ phase: 'Pulling', attempt, queuePosition: 0, error: '', errorKind: '' });
        this.d.log.info('pulling image', { image, attempt });
        try {
          return await this.attempt(flight, ref, params, overall.signal, deadline - this.d.clock.now());
        } catch (err) {
          const e = classifyPullError(overall.signal.aborted ? overall.signal.reason : err, image, params.auth);
          if (overall.signal.aborted || !isRetryable(e) || attempt > this.d.retries) throw e;
          const delay = this.d.backoff.delay(attempt);
          this.d.log.warn('image pull failed, retrying', { image, attempt, kind: e.kind, error: e.message, retryInMs: delay });
          flight.update({ phase: 'Retrying', error: e.message, errorKind: e.kind });
          try {
            await this.d.clock.sleep(delay, overall.signal);
          } catch {
            throw classifyPullError(overall.signal.reason, image, params.auth);
          }
        }
      }
    } finally {
      stopTimer.abort();
      flight.signal.removeEventListener('abort', onFlightAbort);
    }
  }

  /** One call of the runtime's pull under the stall deadline. */
  private async attempt(flight: PullFlight, ref: ImageRef, params: FlightParams, overall: AbortSignal, remainingMs: number): Promise<PulledImage> {
    const image = ref.original.trim();
    // An abort that came before this attempt fires no event any more.
    if (overall.aborted) throw overall.reason;
    const ctl = new AbortController();
    const onOverall = () => ctl.abort(overall.reason);
    overall.addEventListener('abort', onOverall, { once: true });
    const reports = this.d.runtime.capabilities.pullReportsProgress;
    const source = reports ? undefined : this.d.progressSource;
    const watched = this.d.stallTimeoutMs > 0 && (reports || source !== undefined);
    // A runtime's own pull (Docker) reports from the first message on; a containerd source only once it has
    // found the pull's lease, so there the deadline starts with its first report.
    const watch = watched
      ? new StallWatch(
          this.d.clock,
          this.d.stallTimeoutMs,
          (idle) =>
            ctl.abort(new AgentError('DeadlineExceeded', `pull of ${image} stalled: no new bytes for ${Math.round(idle / 1000)} s (stall timeout ${Math.round(this.d.stallTimeoutMs / 1000)} s)`)),
          undefined,
          source === undefined,
        )
      : undefined;
    let live = true;
    const onProgress = (p: PullProgress) => {
      if (!live) return; // a late report of an attempt that already ended
      watch?.progress(p);
      // Once every byte is in, unpacking is all that is left: stay Extracting rather than flip back to Pulling.
      const finishing = flight.state.phase === 'Extracting' && p.bytesTotal > 0 && p.bytesDone >= p.bytesTotal;
      flight.update({ phase: p.extracting || finishing ? 'Extracting' : 'Pulling', bytesDone: p.bytesDone, bytesTotal: p.bytesTotal, layers: p.layers });
    };
    const call = () => this.d.runtime.pullImage(image, { auth: params.auth, signal: ctl.signal, onProgress, timeoutMs: Math.max(1, remainingMs) });
    const aborted = new Promise<never>((_, reject) => {
      if (ctl.signal.aborted) reject(ctl.signal.reason);
      ctl.signal.addEventListener('abort', () => reject(ctl.signal.reason), { once: true });
    });
    aborted.catch(() => undefined);
    try {
      // The runtime may not stop at once when told to: stop waiting for it anyway.
      return await Promise.race([source ? source.track(image, call, onProgress) : call(), aborted]);
    } catch (err) {
      throw ctl.signal.aborted ? ctl.signal.reason : err;
    } finally {
      live = false;
      watch?.close();
      overall.removeEventListener('abort', onOverall);
      if (!ctl.signal.aborted) ctl.abort(new AgentError('Cancelled', 'attempt ended'));
    }
  }

  /** Refuses with ResourceExhausted when the image filesystem is below the free-space floor. */
  private async checkDisk(image: string): Promise<void> {
    if (this.d.minFreeDiskBytes <= 0) return;
    let usage;
    try {
      usage = await this.d.runtime.imageFsUsage();
    } catch (err) {
      this.d.log.warn('cannot read image filesystem usage; pulling without the disk check', { image, error: asAgentError(err).message });
      return;
    }
    if (usage.availableBytes < this.d.minFreeDiskBytes) {
      throw new AgentError(
        'ResourceExhausted',
        `not pulling ${image}: only ${formatBytes(usage.availableBytes)} free on the image filesystem ${usage.mountpoint || '(unknown mount)'}, ` +
          `below the minimum of ${formatBytes(this.d.minFreeDiskBytes)} (--min-free-disk)`,
      );
    }
  }

  /**
   * The resolved digest of a finished pull (3d): what the runtime says it stored for ref's repository, or,
   * when its pull does not tell, the stored image's repo digest. A digest reference must match it.
   */
  private async verifiedDigest(ref: ImageRef, pulled: PulledImage): Promise<string> {
    let digest = pulled.digest;
    if (digest && !digest.includes('@')) digest = `${ref.registry}/${ref.repository}@${digest}`;
    if (!digest) {
      const stored = await this.d.runtime.inspectImage(ref.original.trim()).catch(() => undefined);
      if (stored) digest = repoDigestOf(ref, stored);
    }
    if (!ref.digest) return digest;
    if (!digest.endsWith('@' + ref.digest)) {
      throw new AgentError('FailedPrecondition', `pulled ${ref.original} but the runtime stored ${digest || 'no repo digest for it'}, not ${ref.digest}`);
    }
    return `${ref.registry}/${ref.repository}@${ref.digest}`;
  }
}
