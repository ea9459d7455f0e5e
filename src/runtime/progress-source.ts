// A side channel of byte progress for runtimes whose pull call reports none (CRI PullImage is one unary
// call): something that watches the runtime's store while the call runs.
import type { PullProgress } from './types.js';

/** Reports the progress of one pull while it runs. */
export interface ProgressSource {
  /**
   * Runs `run` (the runtime's pull of ref) and, while it runs, calls onProgress with what the runtime's store
   * shows of that pull. Resolves or rejects as `run` does; never fails because progress could not be read.
   */
  track<T>(ref: string, run: () => Promise<T>, onProgress: (p: PullProgress) => void): Promise<T>;
  /** Releases connections. */
  close(): void;
}
