// The node's image pull service: pulls into the runtime's own store with one flight per image, a node-wide
// FIFO limit, an overall and a stall deadline per pull, retries with backoff for errors that can heal, a disk
// guard, pinning, credentials by registry, and metrics. The API's PullImages and the restart engine's
// pre-pull both use it.
//
// One image of one request, in numbered steps:
//   1. parse the reference (InvalidArgument: Failed at once);
//   2. wait for the request's own `parallel` limit, if any (Queued with its position); from here on the
//      request's own timeout, if it has one, bounds this caller's wait (node-wide queue included);
//   3. join the running flight of that image with the same credentials and the same `always`, or start one
//      (a flight is shared only by callers who would have started the same pull; it runs under the
//      service's own timeout):
//      a. IfNotPresent: a tag or digest already in the store is Done (alreadyPresent);
//      b. wait for a node-wide slot (Queued with its position), then (Pulling) check free disk space;
//      c. attempts: pull (Pulling/Extracting with bytes) under the overall and stall deadlines; on an error
//         that can heal, Retrying after a backoff; otherwise Failed;
//      d. verify a digest reference against what the runtime stored; report the resolved digest;
//   4. pin the image if asked, and send this caller's last event (Done or Failed).
// Steps 1-2 and 4, and the flights, are here; a flight's steps 3a-3d are flight-runner.ts's, and what the store
// holds already (with the looks begun ahead of a pull) present-images.ts's.
import { createHmac, randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import { formatDuration } from '../duration.js';
import type { EnsuredImage } from '../engine/image-puller.js';
import { AgentError, asAgentError } from '../errors.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import { parseImageRef, type ImageRef } from '../image-ref.js';
import type { Runtime } from '../runtime/runtime.js';
import type { PullProgress, RegistryAuth } from '../runtime/types.js';
import { lookupAuth, redact } from './auth.js';
import { Backoff, type BackoffOptions } from '../backoff.js';
import type { ProgressSource } from '../runtime/progress-source.js';
import { FlightRunner, type FlightParams } from './flight-runner.js';
import { LooksAhead } from './present-images.js';
import { PullFlight } from './pull-flight.js';
import { PullMetrics } from './pull-metrics.js';
import { PullQueue, type Release } from './pull-queue.js';
import { initialFlightState, MAX_PULL_TIMEOUT_MS, type AuthKeyring, type FlightState, type PullEvent, type PullRequest, type PullService } from './types.js';

/** Defaults of the service's options (the daemon's flag defaults). */
export const PULL_DEFAULTS = {
  maxParallel: 2,
  retries: 3,
  timeoutMs: 30 * 60_000,
  stallTimeoutMs: 60_000,
  minFreeDiskBytes: 0,
  progressIntervalMs: 200,
} as const;

/** How the daemon builds the service. */
export interface PullServiceOptions {
  /** The node's runtime: pulls go into its own store. */
  runtime: Runtime;
  /** Node-wide limit of pulls running at once (`--max-parallel-pulls`, default 2). */
  maxParallel?: number;
  /** Retries after the first attempt for errors that can heal (`--pull-retries`, default 3). */
  retries?: number;
  /** Overall deadline of one pull from leaving the queue, retries included, ms (default 30 min; > 0, capped at 2^31-1). */
  timeoutMs?: number;
  /** Fail an attempt when no new bytes arrive for this long, except while unpacking, ms (default 60 s; 0: off). */
  stallTimeoutMs?: number;
  /** Refuse to pull when the image filesystem has less free space, bytes (`--min-free-disk`; 0: no check). */
  minFreeDiskBytes?: number;
  /** Node-wide credentials (e.g. the daemon's `--auth-file`); a request's own keyring wins. */
  keyring?: AuthKeyring;
  /** Byte progress for runtimes whose pull reports none; used when the runtime is CRI. */
  progressSource?: ProgressSource;
  backoff?: BackoffOptions;
  /** Least time between two byte-progress events of one image, ms (default 200). */
  progressIntervalMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Prometheus registry to register the pull metrics in (a private one when absent). */
  metricsRegistry?: Registry;
}

/** Options of ensure() beyond the engine's ImagePuller contract. */
export interface EnsureOptions {
  signal?: AbortSignal;
  onProgress?: (p: PullProgress) => void;
  /** Credentials for this pull (e.g. the pod's image pull secrets). */
  keyring?: AuthKeyring;
}

/** The pull service. */
export class ImagePullService implements PullService {
  readonly metrics: PullMetrics;
  private readonly runtime: Runtime;
  private readonly flights = new Map<string, PullFlight>();
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly progressIntervalMs: number;
  /** Key of the credentials' hash in flight keys: per process, so the hash cannot be looked up elsewhere. */
  private readonly authHashKey = randomBytes(32);
  /** Looks in the store begun by lookAhead(), taken by the next flight of their image. */
  private readonly looks: LooksAhead;
  /** Drives each flight (steps 3a-3d). */
  private readonly runner: FlightRunner;

  constructor(private readonly opts: PullServiceOptions) {
    const runtime = (this.runtime = opts.runtime);
    const clock = (this.clock = opts.clock ?? systemClock);
    const log = (this.log = opts.logger ?? silentLogger());
    const metrics = (this.metrics = new PullMetrics(opts.metricsRegistry));
    const queue = new PullQueue(opts.maxParallel ?? PULL_DEFAULTS.maxParallel, (_running, waiting) => metrics.queueLength.set(waiting));
    const timeoutMs = opts.timeoutMs ?? PULL_DEFAULTS.timeoutMs;
    if (!(timeoutMs > 0)) throw new AgentError('InvalidArgument', `the pull timeout must be positive, not ${timeoutMs} ms`);
    const stallTimeoutMs = opts.stallTimeoutMs ?? PULL_DEFAULTS.stallTimeoutMs;
    if (!(stallTimeoutMs >= 0)) throw new AgentError('InvalidArgument', `the pull stall timeout must not be negative, not ${stallTimeoutMs} ms`);
    this.progressIntervalMs = opts.progressIntervalMs ?? PULL_DEFAULTS.progressIntervalMs;
    this.looks = new LooksAhead(runtime, clock);
    this.runner = new FlightRunner({
      runtime,
      queue,
      looks: this.looks,
      clock,
      log,
      metrics,
      backoff: new Backoff(clock, opts.backoff),
      retries: opts.retries ?? PULL_DEFAULTS.retries,
      timeoutMs: Math.min(timeoutMs, MAX_PULL_TIMEOUT_MS),
      stallTimeoutMs: Math.min(stallTimeoutMs, MAX_PULL_TIMEOUT_MS),
      minFreeDiskBytes: opts.minFreeDiskBytes ?? PULL_DEFAULTS.minFreeDiskBytes,
      progressSource: opts.progressSource,
    });
  }

  /** Pulls every image of the request, reporting each change; resolves with each image's last event. */
  async pull(req: PullRequest, onEvent: (e: PullEvent) => void, signal?: AbortSignal): Promise<PullEvent[]> {
    const local = req.parallel && req.parallel > 0 && req.parallel < req.images.length ? new PullQueue(req.parallel) : undefined;
    // Every image listens for the caller leaving: on a signal of the request's own, which may have many listeners.
    const request = new AbortController();
    setMaxListeners(0, request.signal);
    const onAbort = () => request.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await Promise.all(req.images.map((image) => this.pullOne(image, req, onEvent, request.signal, local)));
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Makes ref present (IfNotPresent), sharing a running pull of it; throws AgentError on failure. */
  async ensure(ref: string, opts: EnsureOptions = {}): Promise<EnsuredImage> {
    const parsed = parseImageRef(ref);
    const auth = lookupAuth(opts.keyring, ref) ?? lookupAuth(this.opts.keyring, ref);
    const onEvent = (e: PullEvent) => opts.onProgress?.({ layers: e.layers, bytesDone: e.bytesDone, bytesTotal: e.bytesTotal, extracting: e.phase === 'Extracting' });
    const s = await this.join(parsed, ref, { auth, always: false }, onEvent, opts.signal);
    return { ref, id: s.imageId, digest: s.digest, pulled: !s.alreadyPresent };
  }

  /** See ImagePuller.lookAhead: the look is taken by the next flight of ref within a moment (LooksAhead). */
  lookAhead(ref: string): void {
    this.looks.begin(ref);
  }

  /** See ImagePuller.present. */
  present(ref: string): Promise<boolean> | undefined {
    return this.looks.present(ref);
  }

  /** Pulls running or queued now, by normalised reference (once each). */
  activePulls(): string[] {
    return [...new Set([...this.flights.values()].map((f) => f.key))];
  }

  /** Fails every running pull (daemon shutdown). */
  stop(): void {
    for (const f of this.flights.values()) f.stop(new AgentError('Unavailable', 'the agent is shutting down'));
  }

  private async pullOne(image: string, req: PullRequest, onEvent: (e: PullEvent) => void, signal: AbortSignal | undefined, local?: PullQueue): Promise<PullEvent> {
    const started = this.clock.now();
    const base = (): PullEvent => ({ ...initialFlightState('Failed'), image, elapsedMs: this.clock.now() - started, pinned: false });
    const auth = lookupAuth(req.keyring, image) ?? lookupAuth(this.opts.keyring, image);
    let release: Release | undefined;
    let last: PullEvent | undefined;
    const track = (e: PullEvent) => {
      last = e;
      onEvent(e);
    };
    // This caller's own deadline (from the request): it leaves when it fires; the flight goes on while
    // others wait, under the service's timeout.
    const caller = new AbortController();
    const stopTimer = new AbortController();
    const onAbort = () => caller.abort(new AgentError('Cancelled', `request for ${image} was cancelled`));
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    let deadline: AgentError | undefined;
    try {
      const ref = parseImageRef(image);
      if (local) release = await local.acquire(caller.signal, (queuePosition) => track({ ...base(), phase: 'Queued', queuePosition }));
      const timeoutMs = requestTimeout(req.timeoutMs);
      if (timeoutMs !== undefined) {
        this.clock.sleep(timeoutMs, stopTimer.signal).then(
          () => {
            deadline = new AgentError('DeadlineExceeded', `pull of ${image} did not finish within ${formatDuration(timeoutMs)} (the request's timeout)`);
            caller.abort(deadline);
          },
          () => undefined,
        );
      }
      const state = await this.join(ref, image, { auth, always: !!req.always }, track, caller.signal);
      let pinned = false;
      if (req.pin) pinned = await this.pin(ref);
      const done: PullEvent = { ...base(), ...state, image, phase: 'Done', pinned, elapsedMs: this.clock.now() - started };
      onEvent(done);
      return done;
    } catch (err) {
      const e = deadline ?? asAgentError(err);
      const failed: PullEvent = {
        ...base(),
        ...(last ? { bytesDone: last.bytesDone, bytesTotal: last.bytesTotal, layers: last.layers, attempt: last.attempt } : {}),
        error: redact(e.message, auth),
        errorKind: e.kind,
      };
      onEvent(failed);
      return failed;
    } finally {
      stopTimer.abort();
      signal?.removeEventListener('abort', onAbort);
      release?.();
    }
  }

  /**
   * Attaches to a live flight of ref with the same credentials, starting one when there is none. An
   * IfNotPresent caller may also join an `always` flight (it ends with the image present); an `always`
   * caller joins only an `always` flight, so that it never rides on a presence check.
   */
  private join(ref: ImageRef, image: string, params: FlightParams, onEvent: (e: PullEvent) => void, signal?: AbortSignal): Promise<FlightState> {
    if (signal?.aborted) return Promise.reject(new AgentError('Cancelled', `request for ${image} was cancelled`));
    const key = this.flightKey(ref, params.auth, params.always);
    const candidates = params.always ? [key] : [key, this.flightKey(ref, params.auth, true)];
    // A flight whose callers all left (or that has ended) only winds down: never join it.
    let flight = candidates.map((k) => this.flights.get(k)).find((f) => f && !f.signal.aborted && !f.done);
    if (!flight) {
      const f = new PullFlight(ref.normalized, this.clock, this.progressIntervalMs);
      flight = f;
      this.flights.set(key, f);
      void this.runner.run(f, ref, params).finally(() => {
        if (this.flights.get(key) === f) this.flights.delete(key);
      });
    }
    return flight.attach(image, onEvent, signal);
  }

  /** The flights map's key: the normalised reference, a keyed hash of the credentials (never logged), always. */
  private flightKey(ref: ImageRef, auth: RegistryAuth | undefined, always: boolean): string {
    let authHash = '';
    if (auth) {
      const fields = [auth.username, auth.password, auth.auth, auth.identityToken, auth.registryToken, auth.serverAddress].map((v) => v ?? '');
      authHash = createHmac('sha256', this.authHashKey).update(JSON.stringify(fields)).digest('hex');
    }
    return `${ref.normalized}\0${authHash}\0${always ? 'always' : 'if-not-present'}`;
  }

  /** Pins the image where the runtime can; whether it is pinned now. */
  private async pin(ref: ImageRef): Promise<boolean> {
    if (!this.runtime.pinImage) return false;
    try {
      return await this.runtime.pinImage(ref.original.trim(), true);
    } catch (err) {
      this.log.warn('cannot pin image', { image: ref.original, error: asAgentError(err).message });
      return false;
    }
  }
}

/** A request's timeout as a timer can take it: undefined for 0, absent or not a number (the service's). */
function requestTimeout(ms: number | undefined): number | undefined {
  return ms !== undefined && ms > 0 ? Math.min(ms, MAX_PULL_TIMEOUT_MS) : undefined;
}
