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
import { nextSlotMove, type SlotView, type SlotWatches, type TryState } from './slot-watch.js';
import type { TargetCache } from './targets.js';
import { nodePhase, type ImagePrewarm, type NodeImageStatus, type NodePrewarmEntry } from './types.js';
import { PrewarmReasons } from '../engine/reasons.js';

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
  /** Longest gap between two slot attempts of a node far back in the queue, ms. */
  maxPollMs: number;
  /** When this node last tried for a slot, per prewarm (ms since the epoch). */
  lastTry: Map<string, number>;
  /** `<prewarm>/<generation>` whose seeds were seen done. */
  seedsDone: Set<string>;
  /** The slot Leases of the prewarms this node waits on, watched. */
  slotWatch: SlotWatches;
  /** Runs the prewarm's next step within ms (sooner when already due sooner). */
  wake(prewarm: string, inMs: number): void;
  /** Per `<prewarm>/<generation>`: when this node last read the seeds' records (ms). */
  seedChecks: Map<string, number>;
  /** Per prewarm: what this node remembers of its tries for a slot (see nextSlotMove). */
  tries: Map<string, TryState>;
  /** Per `<prewarm>/<generation>`: the last summary seen (its time and nodes done) and the rate nodes finish at, per ms. */
  progress: Map<string, { t: number; done: number; rate: number }>;
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
  if (!d.targets.index(name).has(d.node)) {
    d.slotWatch.close(name);
    if (entry) await d.record.put(name, undefined);
    return d.idleMs;
  }
  const now = d.clock.now();
  if (!entry || entry.generation !== gen) {
    // Kept, not written: a thousand nodes seeing a new prewarm would otherwise all write at once to say
    // what the summary assumes anyway (no record for the generation: Waiting).
    entry = freshEntry(pw, now);
    d.record.keep(name, entry);
    d.lastTry.set(name, now); // a node far back waits for its turn from the start, too
    d.tries.delete(name); // the queue of a new generation starts again
  }

  if (terminal(entry)) {
    d.slotWatch.close(name);
    return refresh(d, pw, entry);
  }

  const deadline = pw.spec.activeDeadlineSeconds;
  if (deadline && now > Date.parse(entry.firstSeen) + deadline * 1000) {
    for (const img of entry.images) if (img.phase !== 'Succeeded') Object.assign(img, { phase: 'Failed', reason: PrewarmReasons.Deadline, message: `not warm within activeDeadlineSeconds=${deadline}`, completionTime: iso(now) });
    entry.phase = nodePhase(entry.images);
    await d.record.put(name, entry);
    return d.idleMs;
  }
  if (entry.retryAfter && Date.parse(entry.retryAfter) > now) return Date.parse(entry.retryAfter) - now;

  const parallel = pw.spec.maxParallelNodes ?? SPEC_DEFAULTS.maxParallelNodes;
  const later = queueWait({ ...d, index: d.targets.index(name) }, pw, order, parallel, now);
  if (later > 0) return later;

  const seeds = seedsOf(order, pw.spec.seedNodes ?? SPEC_DEFAULTS.seedNodes);
  const seedKey = `${name}/${gen}`;
  if (waitsForSeeds(seeds, d.node) && !d.seedsDone.has(seedKey)) {
    const st = pw.status;
    if (st?.observedGeneration === gen && st.seedsDone) {
      d.seedsDone.add(seedKey); // the summary says so: no reads
    } else {
      // The summary says when the seeds are done (and wakes every node). Meanwhile a node reads the seeds'
      // records itself, the first round after the seeds every pollMs, the k-th round every k polls, at least
      // every maxPollMs: a late summary holds nobody back for long, and far-back nodes add few reads.
      const every = seedCheckEvery((d.targets.index(name).get(d.node) ?? 0) - seeds.length, parallel, d.pollMs, d.maxPollMs);
      const last = d.seedChecks.get(seedKey) ?? Date.parse(entry.firstSeen);
      if (now - last < every) return jitter(d, every - (now - last));
      d.seedChecks.set(seedKey, now);
      if (!(await seedsDone(d, pw, seeds, entry))) return jitter(d, every);
      d.seedsDone.add(seedKey); // seeds that are done stay done for this generation
    }
  }
  d.lastTry.set(name, now);
  // Near the front of the queue the slots are watched: a change wakes this node when it is next in line for a
  // freed slot, and its try then needs no list. nextSlotMove says when it tries, and with what; a lost try is
  // tried again at the next change seen, or with a list of its own within pollMs.
  const index = d.targets.index(name);
  let st = d.tries.get(name);
  if (!st) d.tries.set(name, (st = {}));
  const tryState = st;
  const moveNow = (view: SlotView, at: number) => nextSlotMove(index, d.node, name, view, tryState, parallel, at, { pollMs: d.pollMs, maxPollMs: d.maxPollMs, stepMs: stepMs(d) });
  if (!d.slotWatch.watching(name)) {
    d.slotWatch.watch(name, () => {
      const m = moveNow(d.slotWatch.view(name), d.clock.now());
      d.wake(name, 'wait' in m ? m.wait : 0);
    });
    st.listedAt ??= now; // the watch lists the slots: no list of this node's own before pollMs
  }
  const view = d.slotWatch.view(name);
  const move = moveNow(view, now);
  if ('wait' in move) return move.wait;
  const withView = move.try === 'view';
  if (!withView) st.listedAt = now;
  const slot = await d.slots.tryAcquire(name, parallel, withView ? view.leases : undefined, move.slot);
  if (!slot) {
    st.tryAt = undefined;
    if (withView) Object.assign(st, { lostVersion: view.version, lostAt: now });
    return jitter(d, d.pollMs); // a change seen through the watch wakes it sooner
  }
  d.tries.delete(name);
  d.slotWatch.close(name);
  // The lease as last renewed: releasing needs its current resourceVersion.
  const hold: SlotHold = { lease: slot };
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await hold.renewing;
    if (!hold.lease) return; // lost to another node after it expired
    await d.slots.release(hold.lease).catch((err: unknown) => d.log.warn('prewarm slot not released; it frees itself when its lease expires', { prewarm: name, slot: slot.name, error: asAgentError(err).message }));
  };
  try {
    await pullAll(d, pw, entry, hold, release, signal);
  } finally {
    await release();
  }
  return 0;
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
      const outcome = await d.puller.pull(img.image, { keyring, pin: pw.spec.pin ?? false, signal }, (done, total) => {
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
 * How long a node far back in the stable order waits before it tries for a slot again, so that a thousand
 * waiting nodes do not all poll the slots. From the summary (which every agent receives through its watch of
 * the prewarms), the nodes done, and from two summaries the rate they finish at: the node's place behind what
 * is done by now (extrapolated at that rate). A node more than four rounds of slots back waits until the
 * front is expected near it, or for the next summary (which wakes it), polling proportionally less often
 * than pollMs and at least every maxPollMs (a stale summary or dead nodes ahead never hold it back for good).
 * 0: try now.
 */
export function queueWait(d: Pick<NodePartDeps, 'node' | 'pollMs' | 'maxPollMs' | 'lastTry' | 'random'> & { progress?: NodePartDeps['progress']; index?: ReadonlyMap<string, number> }, pw: ImagePrewarm, order: string[], parallel: number, nowMs: number): number {
  const st = pw.status;
  const gen = pw.metadata.generation ?? 0;
  if (!st || st.observedGeneration !== gen) return 0;
  const done = st.succeeded + st.failed;
  let rate = 0;
  const at = st.lastSummaryTime ? Date.parse(st.lastSummaryTime) : NaN;
  if (d.progress && Number.isFinite(at)) {
    const key = `${pw.metadata.name}/${gen}`;
    const p = d.progress.get(key);
    rate = p?.rate ?? 0;
    if (!p || at > p.t) {
      if (p && done >= p.done) rate = (done - p.done) / (at - p.t);
      d.progress.set(key, { t: at, done, rate });
    }
  }
  const expected = done + (rate > 0 ? rate * Math.max(0, nowMs - at) : 0);
  const ahead = (d.index?.get(d.node) ?? order.indexOf(d.node)) - expected;
  const window = 4 * parallel;
  if (ahead <= window) return 0;
  const since = nowMs - (d.lastTry.get(pw.metadata.name) ?? 0);
  let every = Math.min(d.maxPollMs, d.pollMs * Math.ceil(ahead / parallel));
  if (rate > 0) every = Math.min(every, since + Math.max(100, (ahead - window) / rate));
  return since >= every ? 0 : jitter(d, Math.min(every - since, d.pollMs * 2));
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

/** A step between two nodes in line for a free slot: longer than a slot write takes to be seen, 100 ms to 2 s. */
function stepMs(d: NodePartDeps): number {
  return Math.min(2000, Math.max(100, Math.round(d.slots.writeMs * 3)));
}

/** ms spread by ±25 %, so that nodes that saw the same change do not all ask at once. */
function jitter(d: Pick<NodePartDeps, 'random'>, ms: number): number {
  return Math.round(ms * (0.75 + d.random() * 0.5));
}
