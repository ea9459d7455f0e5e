// One pull of one image on the node, shared by every caller that asked for it (single flight): the state they
// all see, the events they all get, and the rule that the pull is cancelled only when no caller waits any more.
//
//   (new) ─► Queued ─► Pulling ⇄ Extracting ─► Done
//     │        │          │  ▲                    
//     │        │          ▼  │                    
//     │        │       Retrying                   
//     └────────┴──────────┴─────────────► Failed   (error, deadline, stall, cancel when nobody waits)
//   (an image found present goes straight from (new) to Done)
import type { Clock } from '../clock.js';
import { AgentError } from '../errors.js';
import { initialFlightState, type FlightState, type PullEvent } from './types.js';

interface Subscriber {
  image: string;
  onEvent: (e: PullEvent) => void;
}

/** A single-flight pull: shared state, fan-out of events, cancellation when the last caller leaves. */
export class PullFlight {
  private readonly controller = new AbortController();
  private readonly subscribers = new Set<Subscriber>();
  private readonly startedAt: number;
  private readonly outcome: Promise<FlightState>;
  private settle!: { resolve: (s: FlightState) => void; reject: (e: AgentError) => void };
  private lastEmit = 0;
  /** The pending trailing progress event (on the injected clock); aborted to drop it. */
  private trailing: AbortController | undefined;
  private finished = false;
  private emitted = false;
  private emittedState: FlightState | undefined;
  state: FlightState = initialFlightState('Queued');

  /** key: the normalised reference; progressIntervalMs: least time between two progress-only events. */
  constructor(
    readonly key: string,
    private readonly clock: Clock,
    private readonly progressIntervalMs = 200,
  ) {
    this.startedAt = clock.now();
    this.outcome = new Promise<FlightState>((resolve, reject) => (this.settle = { resolve, reject }));
    this.outcome.catch(() => undefined);
  }

  /** Aborts when the flight is cancelled (every caller left) or stopped. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Whether the flight has ended (a new caller must start a new one). */
  get done(): boolean {
    return this.finished;
  }

  /**
   * Adds a caller: it gets the current state at once, then every change, under its own image string.
   * Resolves with the final state when Done; rejects with the failure, or with Cancelled when the caller's
   * signal aborts (the caller leaves; the pull goes on while anyone else waits).
   */
  attach(image: string, onEvent: (e: PullEvent) => void, signal?: AbortSignal): Promise<FlightState> {
    const sub: Subscriber = { image, onEvent };
    if (signal?.aborted) {
      // A flight nobody ever waited on must not run on.
      if (this.subscribers.size === 0) this.cancelUnwatched();
      return Promise.reject(new AgentError('Cancelled', `request for ${image} was cancelled`));
    }
    this.subscribers.add(sub);
    if (this.emitted) this.send(sub);
    return new Promise<FlightState>((resolve, reject) => {
      const leave = () => {
        this.subscribers.delete(sub);
        if (this.subscribers.size === 0) this.cancelUnwatched();
        reject(new AgentError('Cancelled', `request for ${image} was cancelled`));
      };
      signal?.addEventListener('abort', leave, { once: true });
      this.outcome.then(
        (s) => {
          signal?.removeEventListener('abort', leave);
          this.subscribers.delete(sub);
          resolve(s);
        },
        (e: AgentError) => {
          signal?.removeEventListener('abort', leave);
          this.subscribers.delete(sub);
          reject(e);
        },
      );
    });
  }

  /** Changes the state; a phase or position change is sent at once, byte progress at most every interval. */
  update(patch: Partial<FlightState>): void {
    if (this.finished) return;
    const before = this.state;
    this.state = { ...before, ...patch };
    const significant =
      this.state.phase !== before.phase || this.state.queuePosition !== before.queuePosition || this.state.attempt !== before.attempt || this.state.error !== before.error;
    const now = this.clock.now();
    if (significant || now - this.lastEmit >= this.progressIntervalMs) {
      this.emit();
      return;
    }
    if (this.trailing) return;
    const trailing = (this.trailing = new AbortController());
    this.clock.sleep(this.progressIntervalMs, trailing.signal).then(
      () => {
        if (this.trailing !== trailing) return;
        this.trailing = undefined;
        if (!this.finished && this.state !== this.emittedState) this.emit();
      },
      () => undefined,
    );
  }

  /** Ends the flight as Done with the final state. Callers send their own last event. */
  succeed(patch: Partial<FlightState>): void {
    if (this.finished) return;
    this.state = { ...this.state, ...patch, phase: 'Done', queuePosition: 0, error: '', errorKind: '' };
    this.finish();
    this.settle.resolve(this.state);
  }

  /** Ends the flight as Failed. */
  fail(err: AgentError): void {
    if (this.finished) return;
    this.state = { ...this.state, phase: 'Failed', queuePosition: 0, error: err.message, errorKind: err.kind };
    this.finish();
    this.settle.reject(err);
  }

  /** Stops the flight (daemon shutdown): it fails with the reason. */
  stop(reason: AgentError): void {
    this.controller.abort(reason);
  }

  /** The event a caller who asked for image sees for the current state. */
  eventFor(image: string, state: FlightState = this.state): PullEvent {
    return {
      image,
      phase: state.phase,
      queuePosition: state.queuePosition,
      bytesDone: state.bytesDone,
      bytesTotal: state.bytesTotal,
      layers: state.layers,
      digest: state.digest,
      imageId: state.imageId,
      error: state.error,
      errorKind: state.errorKind,
      attempt: state.attempt,
      elapsedMs: this.clock.now() - this.startedAt,
      pinned: false,
      alreadyPresent: state.alreadyPresent,
    };
  }

  private cancelUnwatched(): void {
    if (!this.finished) this.controller.abort(new AgentError('Cancelled', `pull of ${this.key} cancelled: every caller went away`));
  }

  private send(s: Subscriber): void {
    try {
      s.onEvent(this.eventFor(s.image));
    } catch {
      // A caller's broken sink must not break the pull for the others.
    }
  }

  private finish(): void {
    this.finished = true;
    this.trailing?.abort();
    this.trailing = undefined;
  }

  private emit(): void {
    this.trailing?.abort();
    this.trailing = undefined;
    this.lastEmit = this.clock.now();
    this.emitted = true;
    this.emittedState = this.state;
    for (const s of [...this.subscribers]) this.send(s);
  }
}
