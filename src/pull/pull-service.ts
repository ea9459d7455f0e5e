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
import { createHmac, randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { formatBytes } from '../bytes.js';
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
import type { Image, PulledImage, PullProgress, RegistryAuth } from '../runtime/types.js';
import { lookupAuth, redact } from './auth.js';
import { Backoff, type BackoffOptions } from '../backoff.js';
import type { ProgressSource } from '../runtime/progress-source.js';
import { PullFlight } from './pull-flight.js';
import { classifyPullError, isRetryable } from './pull-errors.js';
import { PullMetrics } from './pull-metrics.js';
import { PullQueue, type Release } from './pull-queue.js';
import { StallWatch } from './stall-watch.js';
import { initialFlightState, MAX_PULL_TIMEOUT_MS, type AuthKeyring, type FlightState, type PullEvent, type PullRequest, type PullService } from './types.js';

/** How long a look in the store begun ahead of an ensure (lookAhead) stands for that ensure's own, ms. */
const LOOK_AHEAD_MS = 1000;

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

/** What a flight pulls with; part of its key, so every caller of a flight asked for exactly this. */
interface FlightParams {
  auth?: RegistryAuth;
  always: boolean;
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
  private readonly queue: PullQueue;
  private readonly flights = new Map<string, PullFlight>();
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly backoff: Backoff;
  private readonly retries: number;
  private readonly timeoutMs: number;
  private readonly stallTimeoutMs: number;
  private readonly minFreeDiskBytes: number;
  private readonly progressIntervalMs: number;
  /** Key of the credentials' hash in flight keys: per process, so the hash cannot be looked up elsewhere. */
  private readonly authHashKey = randomBytes(32);
  /** Looks in the store begun by lookAhead(), by normalised reference, with when each began (clock ms). */
  private readonly looks = new Map<string, { at: number; found: Promise<Image | undefined> }>();

  constructor(private readonly opts: PullServiceOptions) {
    this.runtime = opts.runtime;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.logger ?? silentLogger();
    this.metrics = new PullMetrics(opts.metricsRegistry);
    this.queue = new PullQueue(opts.maxParallel ?? PULL_DEFAULTS.maxParallel, (_running, waiting) => this.metrics.queueLength.set(waiting));
    this.backoff = new Backoff(this.clock, opts.backoff);
    this.retries = opts.retries ?? PULL_DEFAULTS.retries;
    const timeoutMs = opts.timeoutMs ?? PULL_DEFAULTS.timeoutMs;
    if (!(timeoutMs > 0)) throw new AgentError('InvalidArgument', `the pull timeout must be positive, not ${timeoutMs} ms`);
    this.timeoutMs = Math.min(timeoutMs, MAX_PULL_TIMEOUT_MS);
    const stallTimeoutMs = opts.stallTimeoutMs ?? PULL_DEFAULTS.stallTimeoutMs;
    if (!(stallTimeoutMs >= 0)) throw new AgentError('InvalidArgument', `the pull stall timeout must not be negative, not ${stallTimeoutMs} ms`);
    this.stallTimeoutMs = Math.min(stallTimeoutMs, MAX_PULL_TIMEOUT_MS);
    this.minFreeDiskBytes = opts.minFreeDiskBytes ?? PULL_DEFAULTS.minFreeDiskBytes;
    this.progressIntervalMs = opts.progressIntervalMs ?? PULL_DEFAULTS.progressIntervalMs;
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

  /** See ImagePuller.lookAhead: the look is taken by the next flight of ref within LOOK_AHEAD_MS. */
  lookAhead(ref: string): void {
    let parsed: ImageRef;
    try {
      parsed = parseImageRef(ref);
    } catch {
      return; // the request is refused with its own message
    }
    const now = this.clock.now();
    // Never kept past its use: looks not taken in time are dropped.
    for (const [k, v] of this.looks) if (now - v.at > LOOK_AHEAD_MS) this.looks.delete(k);
    // A look begun for the same reference a moment ago (the request's image as it arrived, then the plan's) stands.
    if (this.looks.has(parsed.original.trim())) return;
    this.looks.set(parsed.original.trim(), { at: now, found: this.findPresent(parsed) });
  }

  /** See ImagePuller.present. */
  present(ref: string): Promise<boolean> | undefined {
    const look = this.looks.get(ref.trim());
    if (!look || this.clock.now() - look.at > LOOK_AHEAD_MS) return undefined;
    return look.found.then((i) => i !== undefined);
  }

  /** A look lookAhead() began for ref no longer than LOOK_AHEAD_MS ago, taken (once). */
  private takeLook(ref: ImageRef): Promise<Image | undefined> | undefined {
    const key = ref.original.trim();
    const look = this.looks.get(key);
    this.looks.delete(key);
    return look && this.clock.now() - look.at <= LOOK_AHEAD_MS ? look.found : undefined;
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
      void this.run(f, ref, params).finally(() => {
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

  /** Drives one flight to Done or Failed (steps 3a-3d). */
  private async run(flight: PullFlight, ref: ImageRef, params: FlightParams): Promise<void> {
    const image = ref.original.trim();
    try {
      // Let the first caller attach before anything is sent.
      await Promise.resolve();
      if (!params.always) {
        const present = await (this.takeLook(ref) ?? this.findPresent(ref));
        flight.signal.throwIfAborted();
        if (present) {
          flight.succeed({ alreadyPresent: true, imageId: present.id, digest: this.repoDigestOf(ref, present) });
          this.metrics.pulls.inc({ result: 'present' });
          return;
        }
      }
      const release = await this.queue.acquire(flight.signal, (queuePosition) => flight.update({ phase: 'Queued', queuePosition }));
      const started = this.clock.now();
      try {
        flight.update({ phase: 'Pulling', queuePosition: 0 });
        await this.checkDisk(image);
        flight.signal.throwIfAborted();
      } catch (err) {
        release();
        throw err;
      }
      // From here on the pull reaches the runtime: only such pulls count as in progress and have a duration.
      this.metrics.inProgress.inc();
      try {
        const pulled = await this.attempts(flight, ref, params);
        const digest = await this.verifiedDigest(ref, pulled);
        flight.succeed({ imageId: pulled.id, digest });
        this.metrics.pulls.inc({ result: 'pulled' });
        this.metrics.duration.observe({ result: 'pulled' }, (this.clock.now() - started) / 1000);
        if (flight.state.bytesTotal > 0) this.metrics.bytes.observe(flight.state.bytesTotal);
        this.log.info('pulled image', { image, digest, bytes: flight.state.bytesTotal, ms: this.clock.now() - started, attempts: flight.state.attempt });
      } catch (err) {
        const e = classifyPullError(err, image, params.auth);
        const result = e.kind === 'Cancelled' ? 'cancelled' : 'failed';
        this.metrics.duration.observe({ result }, (this.clock.now() - started) / 1000);
        throw e;
      } finally {
        release();
        this.metrics.inProgress.dec();
      }
    } catch (err) {
      const e = classifyPullError(err, image, params.auth);
      if (e.kind === 'Cancelled') this.metrics.pulls.inc({ result: 'cancelled' });
      else this.metrics.pulls.inc({ result: 'failed' });
      this.log.warn('image pull failed', { image, kind: e.kind, error: e.message, attempts: flight.state.attempt });
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
    const deadline = this.clock.now() + this.timeoutMs;
    this.clock.sleep(this.timeoutMs, stopTimer.signal).then(
      () => overall.abort(new AgentError('DeadlineExceeded', `pull of ${image} did not finish within ${formatDuration(this.timeoutMs)} (--pull-timeout)`)),
      () => undefined,
    );
    try {
      for (let attempt = 1; ; attempt++) {
        flight.update({ phase: 'Pulling', attempt, queuePosition: 0, error: '', errorKind: '' });
        this.log.info('pulling image', { image, attempt });
        try {
          return await this.attempt(flight, ref, params, overall.signal, deadline - this.clock.now());
        } catch (err) {
          const e = classifyPullError(overall.signal.aborted ? overall.signal.reason : err, image, params.auth);
          if (overall.signal.aborted || !isRetryable(e) || attempt > this.retries) throw e;
          const delay = this.backoff.delay(attempt);
          this.log.warn('image pull failed, retrying', { image, attempt, kind: e.kind, error: e.message, retryInMs: delay });
          flight.update({ phase: 'Retrying', error: e.message, errorKind: e.kind });
          try {
            await this.clock.sleep(delay, overall.signal);
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
    const reports = this.runtime.capabilities.pullReportsProgress;
    const source = reports ? undefined : this.opts.progressSource;
    const watched = this.stallTimeoutMs > 0 && (reports || source !== undefined);
    // A runtime's own pull (Docker) reports from the first message on; a containerd source only once it has
    // found the pull's lease, so there the deadline starts with its first report.
    const watch = watched
      ? new StallWatch(
          this.clock,
          this.stallTimeoutMs,
          (idle) =>
            ctl.abort(new AgentError('DeadlineExceeded', `pull of ${image} stalled: no new bytes for ${Math.round(idle / 1000)} s (stall timeout ${Math.round(this.stallTimeoutMs / 1000)} s)`)),
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
    const call = () => this.runtime.pullImage(image, { auth: params.auth, signal: ctl.signal, onProgress, timeoutMs: Math.max(1, remainingMs) });
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
    if (this.minFreeDiskBytes <= 0) return;
    let usage;
    try {
      usage = await this.runtime.imageFsUsage();
    } catch (err) {
      this.log.warn('cannot read image filesystem usage; pulling without the disk check', { image, error: asAgentError(err).message });
      return;
    }
    if (usage.availableBytes < this.minFreeDiskBytes) {
      throw new AgentError(
        'ResourceExhausted',
        `not pulling ${image}: only ${formatBytes(usage.availableBytes)} free on the image filesystem ${usage.mountpoint || '(unknown mount)'}, ` +
          `below the minimum of ${formatBytes(this.minFreeDiskBytes)} (--min-free-disk)`,
      );
    }
  }

  /** The image in the store that ref names: by tag, or by repo digest for a digest reference. */
  private async findPresent(ref: ImageRef): Promise<Image | undefined> {
    const direct = await this.runtime.inspectImage(ref.original.trim()).catch(() => undefined);
    if (direct && (!ref.digest || this.hasDigest(ref, direct) || direct.repoDigests.length === 0)) return direct;
    const all = await this.runtime.listImages().catch(() => [] as Image[]);
    return all.find((img) => (ref.digest ? this.hasDigest(ref, img) : img.repoTags.some((t) => normalized(t) === ref.normalized)));
  }

  private hasDigest(ref: ImageRef, img: Image): boolean {
    const want = `${ref.registry}/${ref.repository}@${ref.digest}`;
    return img.repoDigests.some((d) => normalized(d) === want) || img.id === ref.digest;
  }

  /** The repo digest of img for ref's repository (`name@sha256:…`), '' when the runtime lists none. */
  private repoDigestOf(ref: ImageRef, img: Image): string {
    const repo = `${ref.registry}/${ref.repository}@`;
    const mine = img.repoDigests.find((d) => normalized(d).startsWith(repo));
    if (ref.digest && mine && !normalized(mine).endsWith(ref.digest)) {
      return img.repoDigests.find((d) => d.endsWith(ref.digest as string)) ?? mine;
    }
    return mine ?? img.repoDigests[0] ?? '';
  }

  /**
   * The resolved digest of a finished pull (3d): what the runtime says it stored for ref's repository, or,
   * when its pull does not tell, the stored image's repo digest. A digest reference must match it.
   */
  private async verifiedDigest(ref: ImageRef, pulled: PulledImage): Promise<string> {
    let digest = pulled.digest;
    if (digest && !digest.includes('@')) digest = `${ref.registry}/${ref.repository}@${digest}`;
    if (!digest) {
      const stored = await this.runtime.inspectImage(ref.original.trim()).catch(() => undefined);
      if (stored) digest = this.repoDigestOf(ref, stored);
    }
    if (!ref.digest) return digest;
    if (!digest.endsWith('@' + ref.digest)) {
      throw new AgentError('FailedPrecondition', `pulled ${ref.original} but the runtime stored ${digest || 'no repo digest for it'}, not ${ref.digest}`);
    }
    return `${ref.registry}/${ref.repository}@${ref.digest}`;
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

function normalized(ref: string): string {
  try {
    return parseImageRef(ref).normalized;
  } catch {
    return ref;
  }
}

