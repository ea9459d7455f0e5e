// One node's part of one ImagePrewarm, as a step function the agent calls again after the delay it returns:
//
//   (not targeted) ──> nothing
//   Waiting ──seeds done (or is a seed)──> take a slot ──> Pulling ──> Succeeded
//      ^                    │ no slot free: poll again            │ failed, attempts left: back off
//      └────────────────────┴─────────────────────────────────────┘ failed, none left / deadline: Failed
//   Succeeded ──refresh interval, an image gone──> Waiting
//
// Every change is written to this node's NodePrewarm before the next side effect (a fresh all-Waiting entry is
// kept in memory until the first change: no record means Waiting to every reader), so a restarted agent
// picks up where it was (a slot it still holds is taken again, not waited for).
import type { Clock } from '../clock.js';
import { backoffDelay } from '../backoff.js';
import { asAgentError } from '../errors.js';
import { REASON_FORBIDDEN } from '../kube/access-review.js';
import type { Logger } from '../log.js';
import type { AuthKeyring } from '../pull/types.js';
import type { FleetApi } from './fleet-api.js';
import type { FleetPuller } from './fleet-puller.js';
import type { NodeRecord } from './node-record.js';
import { seedsOf } from './node-order.js';
import type { SlotClaimer } from './slots.js';
import { renewWhilePulling, type SlotHold } from './slot-renewal.js';
import { chainMove, chainPlace, type ChainState } from './slot-chain.js';
import type { SlotLease } from './fleet-api.js';
import type { TargetCache } from './targets.js';
import { nodePhase, type ImagePrewarm, type NodeImageStatus, type NodePrewarmEntry } from './types.js';
import { PrewarmReasons } from './reasons.js';

/** The longest back-off between two failed attempts at an image, ms. */
const MAX_ATTEMPT_BACKOFF_MS = 300_000;

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

const iso = (ms: number): string => new Date(ms).toISOString();
const terminal = (e: NodePrewarmEntry): boolean => e.phase === 'Succeeded' || e.phase === 'Failed';

/** A fresh entry for a generation: every image Waiting. */
export function freshEntry(pw: ImagePrewarm, nowMs: number): NodePrewarmEntry {
  return {
    generation: pw.metadata.generation ?? 0,
    phase: 'Waiting',
    firstSeen: iso(nowMs),
    images: [...new Set(pw.spec.images)].map((image) => ({ image, phase: 'Waiting', bytesDone: 0, bytesTotal: 0, attempts: 0 })),
  };
}

/** Runs one step of this node's part; resolves with the delay before the next step, ms. */
export async function stepNodePart(d: NodePartDeps, pw: ImagePrewarm, signal?: AbortSignal): Promise<number> {
  const name = pw.metadata.name;
  const gen = pw.metadata.generation ?? 0;
  const order = await d.targets.order(pw);
  let entry = await d.record.entry(name);
  const handed = d.handed(name);
  if (handed) d.spend(handed);
  if (!d.targets.index(name).has(d.node)) {
    if (handed) await giveBack(d, name, handed);
    if (entry) await d.record.put(name, undefined);
    return d.idleMs;
  }
  const now = d.clock.now();
  if (!entry || entry.generation !== gen) {
    // Kept, not written: a thousand nodes seeing a new prewarm would otherwise all write at once to say
    // what the summary assumes anyway (no record for the generation: Waiting).
    entry = freshEntry(pw, now);
    d.record.keep(name, entry);
    d.chain.delete(name); // the order of a new generation starts again
  }

  if (terminal(entry)) {
    if (handed) await giveBack(d, name, handed);
    return refresh(d, pw, entry);
  }

  const deadline = pw.spec.activeDeadlineSeconds;
  if (deadline && now > Date.parse(entry.firstSeen) + deadline * 1000) {
    for (const img of entry.images) if (img.phase !== 'Succeeded') Object.assign(img, { phase: 'Failed', reason: PrewarmReasons.Deadline, message: `not warm within activeDeadlineSeconds=${deadline}`, completionTime: iso(now) });
    entry.phase = nodePhase(entry.images);
    await d.record.put(name, entry);
    if (handed) await giveBack(d, name, handed);
    return d.idleMs;
  }
  if (entry.retryAfter && Date.parse(entry.retryAfter) > now) {
    if (handed) await giveBack(d, name, handed); // backing off: the next node need not wait for it
    return Date.parse(entry.retryAfter) - now;
  }

  const parallel = pw.spec.maxParallelNodes ?? SPEC_DEFAULTS.maxParallelNodes;
  const seedCount = pw.spec.seedNodes ?? SPEC_DEFAULTS.seedNodes;
  const place = chainPlace(order, d.targets.index(name), d.node, seedCount, parallel)!;
  let st = d.chain.get(name);
  if (!st) d.chain.set(name, (st = {}));
  // A slot handed on to this node by its predecessor: no request to get it (see slot-chain.ts).
  let slot = handed ? await d.slots.takeHanded(handed) : undefined;
  if (!slot) {
    const seeds = seedsOf(order, seedCount);
    const seedKey = `${name}/${gen}`;
    if (place.afterSeeds && waitsForSeeds(seeds, d.node) && !d.seedsDone.has(seedKey)) {
      const status = pw.status;
      if (status?.observedGeneration === gen && status.seedsDone) {
        d.seedsDone.add(seedKey); // the summary says so: no reads
      } else {
        // The summary says when the seeds are done (and wakes every node). Meanwhile the first round after the
        // seeds reads their records itself every pollMs (the nodes after it never need to: they are handed a
        // slot, which the first round only has once the seeds are done).
        const every = seedCheckEvery(place.place - seeds.length, parallel, d.pollMs, d.maxPollMs);
        const last = d.seedChecks.get(seedKey) ?? Date.parse(entry.firstSeen);
        if (now - last < every) return jitter(d, every - (now - last));
        d.seedChecks.set(seedKey, now);
        if (!(await seedsDone(d, pw, seeds, entry))) return jitter(d, every);
        d.seedsDone.add(seedKey); // seeds that are done stay done for this generation
      }
    }
    const status = pw.status?.observedGeneration === gen ? pw.status : undefined;
    const summary = status ? { done: status.succeeded + status.failed } : undefined;
    const move = chainMove(place, st, summary, Date.parse(entry.firstSeen), now, { fallbackMs: fallbackMs(d), maxPollMs: d.maxPollMs });
    if ('wait' in move) return move.wait;
    if (move.try === 'home') {
      st.homeTried = true;
      slot = await d.slots.createHome(name, place.home);
    } else {
      st.listedAt = now;
      slot = await d.slots.tryAcquire(name, parallel, undefined, place.home);
    }
    if (!slot) return move.try === 'home' ? 0 : jitter(d, fallbackMs(d));
  }
  d.chain.delete(name);
  // The lease as last renewed: releasing needs its current resourceVersion.
  const hold: SlotHold = { lease: slot };
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await hold.renewing;
    if (!hold.lease) return; // lost to another node after it expired
    try {
      if (place.successor && (await d.slots.handOn(hold.lease, place.successor))) return;
      await d.slots.release(hold.lease);
    } catch (err) {
      d.log.warn('prewarm slot not handed on or released; it frees itself when its lease expires', { prewarm: name, slot: slot.name, error: asAgentError(err).message });
    }
  };
  try {
    await pullAll(d, pw, entry, hold, release, signal);
  } finally {
    await release();
  }
  return 0;
}

/** Gives back a slot handed to this node that it has no use for (it is done, backing off, or not targeted). */
async function giveBack(d: NodePartDeps, prewarm: string, l: SlotLease): Promise<void> {
  await d.slots.release(l).catch((err: unknown) => d.log.debug('handed prewarm slot not given back; it frees itself when its lease expires', { prewarm, error: asAgentError(err).message }));
}

/** How often a node whose turn came, with no slot handed to it, reads the slots itself: twice the lease, at least pollMs. */
function fallbackMs(d: NodePartDeps): number {
  return Math.max(d.pollMs, 2 * d.leaseSeconds * 1000);
}

/** True when every seed has finished this generation (or is gone). */
async function seedsDone(d: NodePartDeps, pw: ImagePrewarm, seeds: string[], mine: NodePrewarmEntry): Promise<boolean> {
  const gen = pw.metadata.generation ?? 0;
  for (const seed of seeds) {
    const e = (await d.api.getNodePrewarm(seed))?.status?.prewarms?.[pw.metadata.name];
    if (e && e.generation === gen && terminal(e)) continue;
    if (!e || e.generation !== gen) {
      if (d.clock.now() - Date.parse(mine.firstSeen) > d.seedGoneMs) continue; // the seed's agent never came
    }
    return false;
  }
  return true;
}

/** Pulls the images not yet warm, holding the slot; records progress and the outcome. */
async function pullAll(d: NodePartDeps, pw: ImagePrewarm, entry: NodePrewarmEntry, hold: SlotHold, release: () => Promise<void>, signal?: AbortSignal): Promise<void> {
  const name = pw.metadata.name;
  const renewal = renewWhilePulling(d, name, hold);
  try {
    let keyring: AuthKeyring | undefined;
    try {
      keyring = await d.keyring(pw);
    } catch (err) {
      const e = asAgentError(err);
      // A creator without the rights the prewarm needs is refused for good: trying again would not change it.
      const forbidden = e.reason === REASON_FORBIDDEN;
      for (const img of entry.images) {
        if (img.phase === 'Succeeded') continue;
        if (forbidden) Object.assign(img, { phase: 'Failed', reason: REASON_FORBIDDEN, message: e.message, attempts: Math.max(1, img.attempts), completionTime: iso(d.clock.now()) });
        else fail(d, pw, entry, img, `pull secret: ${e.message}`);
      }
      await settle(d, pw, entry);
      return;
    }
    entry.retryAfter = undefined;
    for (const img of entry.images) {
      if (img.phase === 'Succeeded' || img.phase === 'Failed') continue;
      Object.assign(img, { phase: 'Pulling', startTime: iso(d.clock.now()), message: undefined, reason: undefined, attempts: img.attempts + 1 });
      entry.phase = 'Pulling';
      // Recorded alongside the pull, not before it: a pull is safe to repeat, and the slot is held meanwhile.
      const recorded = d.record.put(name, entry).catch((err: unknown) => d.log.debug('prewarm progress not recorded', { prewarm: name, error: asAgentError(err).message }));
      let lastWrite = d.clock.now();
      const owner = { uid: pw.metadata.uid ?? '', name };
      const outcome = await d.puller.pull(img.image, { keyring, pin: pw.spec.pin ?? false, owner, signal }, (done, total) => {
        img.bytesDone = done;
        img.bytesTotal = total;
        if (d.clock.now() - lastWrite >= d.progressEveryMs) {
          lastWrite = d.clock.now();
          void d.record.put(name, entry).catch(() => undefined);
        }
      });
      await recorded;
      if (outcome.ok) {
        Object.assign(img, { phase: 'Succeeded', digest: outcome.digest, pinned: outcome.pinned, completionTime: iso(d.clock.now()), message: undefined, reason: undefined });
        if (img.bytesTotal > 0) img.bytesDone = img.bytesTotal;
      } else if (outcome.reason) {
        // Not mended by a retry (a pin over the node's cap): Failed at once, with its own reason.
        Object.assign(img, { phase: 'Failed', digest: outcome.digest, reason: outcome.reason, message: outcome.message, completionTime: iso(d.clock.now()) });
      } else {
        fail(d, pw, entry, img, outcome.message || outcome.kind || 'pull failed');
      }
    }
    renewal.stop();
    await release(); // the next node may start while this one records its outcome
    await settle(d, pw, entry);
  } finally {
    renewal.stop();
  }
}

/** Records a failed attempt (reason ImagePullFailed): Waiting again with a back-off while attempts are left, else Failed. */
function fail(d: NodePartDeps, pw: ImagePrewarm, entry: NodePrewarmEntry, img: NodeImageStatus, message: string): void {
  const limit = pw.spec.backoffLimit ?? SPEC_DEFAULTS.backoffLimit;
  const now = d.clock.now();
  img.reason = PrewarmReasons.PullFailed;
  if (img.attempts === 0) img.attempts = 1;
  if (img.attempts > limit) {
    Object.assign(img, { phase: 'Failed', message: `${message} (after ${img.attempts} attempts)`, completionTime: iso(now) });
    return;
  }
  img.phase = 'Waiting';
  img.message = `${message} (attempt ${img.attempts} of ${limit + 1}; retrying)`;
  const delay = backoffDelay(img.attempts, { initialMs: d.backoffBaseMs, maxMs: MAX_ATTEMPT_BACKOFF_MS });
  const next = now + delay;
  if (!entry.retryAfter || Date.parse(entry.retryAfter) < next) entry.retryAfter = iso(next);
}

async function settle(d: NodePartDeps, pw: ImagePrewarm, entry: NodePrewarmEntry): Promise<void> {
  entry.phase = nodePhase(entry.images);
  if (entry.phase === 'Succeeded') {
    entry.lastCheck = iso(d.clock.now());
    entry.retryAfter = undefined;
  }
  await d.record.put(pw.metadata.name, entry);
}

/** A finished part: with `refreshSeconds`, check the images are still here and pull again what is gone. */
async function refresh(d: NodePartDeps, pw: ImagePrewarm, entry: NodePrewarmEntry): Promise<number> {
  const every = (pw.spec.refreshSeconds ?? 0) * 1000;
  if (every <= 0 || entry.phase !== 'Succeeded') return d.idleMs;
  const due = Date.parse(entry.lastCheck ?? entry.firstSeen) + every - d.clock.now();
  if (due > 0) return due;
  const gone: NodeImageStatus[] = [];
  for (const img of entry.images) if (!(await d.puller.present(img.image))) gone.push(img);
  entry.lastCheck = iso(d.clock.now());
  if (gone.length > 0) {
    d.log.info('prewarmed images gone from the node; pulling them again', { prewarm: pw.metadata.name, images: gone.map((g) => g.image) });
    for (const img of gone) Object.assign(img, { phase: 'Waiting', bytesDone: 0, attempts: 0, message: 'gone from the node at refresh', completionTime: undefined });
    entry.phase = 'Waiting';
    await d.record.put(pw.metadata.name, entry);
    return 0;
  }
  await d.record.put(pw.metadata.name, entry);
  return every;
}

/**
 * True when the node must wait for seeds before it tries for a slot: there are seeds and it is not one. With no
 * seeds nobody waits (before, every node waited one poll for the summary to say the empty set was done).
 */
export function waitsForSeeds(seeds: readonly string[], node: string): boolean {
  return seeds.length > 0 && !seeds.includes(node);
}

/** How often a node waiting for the seeds reads their records: every k polls in the k-th round after them, at most maxPollMs. */
export function seedCheckEvery(placeAfterSeeds: number, parallel: number, pollMs: number, maxPollMs: number): number {
  const round = Math.floor(Math.max(0, placeAfterSeeds) / Math.max(1, parallel)) + 1;
  return Math.min(maxPollMs, pollMs * round);
}

/** ms spread by ±25 %, so that nodes that saw the same change do not all ask at once. */
function jitter(d: Pick<NodePartDeps, 'random'>, ms: number): number {
  return Math.round(ms * (0.75 + d.random() * 0.5));
}
