// One node's part of one ImagePrewarm, as a step function the agent calls again after the delay it returns:
//
//   (not targeted) ──> nothing
//   Waiting ──seeds done (or is a seed)──> take a slot (none when every target fits) ──> Pulling ──> Succeeded
//      ^                    │ no slot free: poll again            │ failed, attempts left: back off
//      └────────────────────┴─────────────────────────────────────┘ failed, none left / deadline: Failed
//   Succeeded ──refresh interval, an image gone──> Waiting
//
// Every change is written to this node's NodePrewarm before the next side effect (a fresh all-Waiting entry is
// kept in memory until the first change: no record means Waiting to every reader), so a restarted agent
// picks up where it was (a slot it still holds is taken again, not waited for).
import { asAgentError } from '../../errors.js';
import type { SlotLease } from './fleet-api.js';
import { iso, SPEC_DEFAULTS, terminal, type NodePartDeps } from './node-part-deps.js';
import { pullAll, refresh } from './node-pull.js';
import { seedsOf } from './node-order.js';
import type { SlotHold } from './slot-renewal.js';
import { chainMove, chainPlace, type ChainPlace } from './slot-chain.js';
import { nodePhase, type ImagePrewarm, type NodePrewarmEntry } from './types.js';
import { PrewarmReasons } from './reasons.js';

export { SPEC_DEFAULTS, type NodePartDeps } from './node-part-deps.js';

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
  if (slotless(order.length, seedCount, parallel)) {
    // Every target fits in maxParallelNodes and none waits for seeds: a slot could never be refused, so none is
    // taken (its Lease's create and delete, two writes a node). A rollout's pre-warm of up to 5 nodes is such.
    if (handed) await giveBack(d, name, handed);
    d.chain.delete(name);
    await pullAll(d, pw, entry, { lease: undefined }, async () => undefined, signal);
    return 0;
  }
  const place = chainPlace(order, d.targets.index(name), d.node, seedCount, parallel)!;
  const slot = await findSlot(d, pw, entry, { order, place, handed }, now);
  if (typeof slot === 'number') return slot;
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

/**
 * The slot for this node's pull: the one handed to it, or one it takes when its turn has come (after the seeds);
 * else the delay before it looks again, ms.
 */
async function findSlot(
  d: NodePartDeps,
  pw: ImagePrewarm,
  entry: NodePrewarmEntry,
  { order, place, handed }: { order: string[]; place: ChainPlace; handed: SlotLease | undefined },
  now: number,
): Promise<SlotLease | number> {
  const name = pw.metadata.name;
  const gen = pw.metadata.generation ?? 0;
  const parallel = pw.spec.maxParallelNodes ?? SPEC_DEFAULTS.maxParallelNodes;
  const seedCount = pw.spec.seedNodes ?? SPEC_DEFAULTS.seedNodes;
  let st = d.chain.get(name);
  if (!st) d.chain.set(name, (st = {}));
  // A slot handed on to this node by its predecessor: no request to get it (see slot-chain.ts).
  const taken = handed ? await d.slots.takeHanded(handed) : undefined;
  if (taken) return taken;
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
  let slot: SlotLease | undefined;
  if (move.try === 'home') {
    st.homeTried = true;
    slot = await d.slots.createHome(name, place.home);
  } else {
    st.listedAt = now;
    slot = await d.slots.tryAcquire(name, parallel, undefined, place.home);
  }
  return slot ?? (move.try === 'home' ? 0 : jitter(d, fallbackMs(d)));
}

/**
 * True when a node pulls without a slot: the prewarm has no seeds and its targets, as this node lists them, are no
 * more than maxParallelNodes. Nodes added while others pull without one take slots (the targets no longer fit),
 * so the bound may be passed once, by those nodes, for as long as the first ones pull.
 */
export function slotless(targets: number, seeds: number, parallel: number): boolean {
  return seeds === 0 && targets <= parallel;
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
