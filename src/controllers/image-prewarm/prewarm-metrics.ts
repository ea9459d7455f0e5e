// What the fleet pre-warm reports about each ImagePrewarm: its nodes by state, as its status (the summary an
// agent writes) says. An interface, so the fleet depends on no metrics library.
import type { ImagePrewarmStatus } from './types.js';

/** Where the fleet agent reports each ImagePrewarm's progress as it sees it, and when the object is gone. */
export interface PrewarmMetrics {
  progress(prewarm: string, status: ImagePrewarmStatus | undefined): void;
  forget(prewarm: string): void;
}
