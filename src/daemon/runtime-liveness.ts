// Liveness as the kubelet should see it: the agent is alive while it can reach its runtime, or has lost it
// for less than a bounded time. A DaemonSet pod whose mounted socket went stale (the runtime restarted and
// made a new socket the pod cannot see) then fails its probe and is restarted.
import type { Clock } from '../clock.js';
import { formatDuration } from '../duration.js';
import { asAgentError } from '../errors.js';

/** How long one probe of the runtime may take before it counts as a failure. */
const PROBE_TIMEOUT_MS = 5000;

/** Tracks when the runtime last answered; probe() says whether the agent should be considered alive. */
export class RuntimeLiveness {
  private lastOk: number;
  private lastError = '';

  /** ping: a cheap call to the runtime (its version); timeoutMs: how long without an answer is still alive. */
  constructor(
    private readonly ping: () => Promise<unknown>,
    private readonly timeoutMs: number,
    private readonly clock: Clock,
  ) {
    this.lastOk = clock.now();
  }

  /** Records a successful call to the runtime made elsewhere (e.g. by the readiness probe). */
  sawRuntime(): void {
    this.lastOk = this.clock.now();
  }

  /** Asks the runtime; resolves with undefined when alive, or why not once it has been gone too long. */
  async probe(): Promise<string | undefined> {
    try {
      await withTimeout(this.ping(), PROBE_TIMEOUT_MS);
      this.lastOk = this.clock.now();
      return undefined;
    } catch (err) {
      this.lastError = asAgentError(err).message;
    }
    const gone = this.clock.now() - this.lastOk;
    if (gone < this.timeoutMs) return undefined;
    return `the runtime has not answered for ${formatDuration(gone)} (--liveness-runtime-timeout ${formatDuration(this.timeoutMs)}): ${this.lastError}`;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${formatDuration(ms)}`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
