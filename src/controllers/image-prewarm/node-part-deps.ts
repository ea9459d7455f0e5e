// What one node's part of an ImagePrewarm needs (node-part.ts, node-pull.ts), the spec's defaults, and the
// small rules both files read.
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { AuthKeyring } from '../../pull/types.js';
import type { FleetApi, SlotLease } from './fleet-api.js';
import type { FleetPuller } from './fleet-puller.js';
import type { NodeRecord } from './node-record.js';
import type { SlotClaimer } from './slots.js';
import type { ChainState } from './slot-chain.js';
import type { TargetCache } from './targets.js';
import type { ImagePrewarm, NodePrewarmEntry } from './types.js';

/** Defaults of the spec's optional fields. */
export const SPEC_DEFAULTS = { maxParallelNodes: 1, seedNodes: 0, backoffLimit: 3 } as const;

/** What a node's part needs. */
export interface NodePartDeps {
  api: FleetApi;
  node: string;
  record: NodeRecord;
  slots: SlotClaimer;
  puller: FleetPuller;
  targets: TargetCache;
  clock: Clock;
  /** Source of the jitter of the polls, in [0, 1). */
  random: () => number;
  log: Logger;
  keyring(pw: ImagePrewarm): Promise<AuthKeyring | undefined>;
  /** Delay between polls while waiting for seeds or a slot, ms. */
  pollMs: number;
  /** Delay before checking a finished prewarm again when it has no refresh, ms. */
  idleMs: number;
  /** A seed with no record this long after this node first saw the generation is taken as gone, ms. */
  seedGoneMs: number;
  /** Lease duration, s; the slot is renewed every third of it. */
  leaseSeconds: number;
  /** Base of the exponential back-off between failed attempts, ms (capped at MAX_ATTEMPT_BACKOFF_MS). */
  backoffBaseMs: number;
  /** Shortest gap between two progress writes while pulling, ms. */
  progressEveryMs: number;
  /** Longest wait between two looks of a waiting node (a hand-on or a new summary wakes it sooner), ms. */
  maxPollMs: number;
  /** `<prewarm>/<generation>` whose seeds were seen done. */
  seedsDone: Set<string>;
  /** The slot Lease handed to this node for the prewarm (its turn label names it), if any and not spent. */
  handed(prewarm: string): SlotLease | undefined;
  /** Marks that version of a handed Lease as used (taken, or given back): handed() no longer offers it. */
  spend(l: SlotLease): void;
  /** Per `<prewarm>/<generation>`: when this node last read the seeds' records (ms). */
  seedChecks: Map<string, number>;
  /** Per prewarm: what this node remembers of its wait for a slot (see chainMove). */
  chain: Map<string, ChainState>;
}

/** An epoch-ms time as the records write it. */
export const iso = (ms: number): string => new Date(ms).toISOString();
/** Whether a node's entry has finished (Succeeded or Failed). */
export const terminal = (e: NodePrewarmEntry): boolean => e.phase === 'Succeeded' || e.phase === 'Failed';
