// What the standalone strategy and its parts (replacements, rollback) run on.
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';

/** What the standalone strategy needs. */
export interface StandaloneDeps {
  runtime: Runtime;
  clock: Clock;
  log: Logger;
  /** True once the agent is draining. */
  draining(): boolean;
  /** Aborts when the agent starts draining (cuts waits for the runtime short). */
  drainSignal?: AbortSignal;
  /** This agent's identity, put on its replacements (AGENT_LABEL). */
  agentId?: string;
}
