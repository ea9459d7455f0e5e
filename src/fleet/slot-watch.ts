// The slot Leases of the prewarms this node waits on, followed through one list-and-watch per prewarm, so that
// a slot given back (or expired) is seen when it happens instead of at the next poll, and a try for a slot
// needs no list. The watch is open only while the node waits near the front of the queue; it is closed once
// the node holds a slot or its part is over.
import { asAgentError } from '../errors.js';
import type { Logger } from '../log.js';
import type { FleetApi, PrewarmFollower, SlotLease } from './fleet-api.js';
import { rankKey } from './node-order.js';
import { slotFree, slotIndex } from './slots.js';

/** Follows the slot Leases of the prewarms this node waits on. */
export class SlotWatches {
  private readonly open = new Map<string, { follower: PrewarmFollower; leases?: SlotLease[]; version: number }>();
  /** List-and-watch requests made (for the benchmark's per-node count). */
  requests = 0;

  constructor(
    private readonly api: FleetApi,
    private readonly namespace: string,
    private readonly log: Logger,
  ) {}

  /** Starts following the prewarm's slots unless already; onChange gets every slot after each change. */
  watch(prewarm: string, onChange: (leases: SlotLease[]) => void): void {
    if (this.open.has(prewarm)) return;
    const entry: { follower?: PrewarmFollower; leases?: SlotLease[]; version: number } = { version: 0 };
    this.requests++;
    let warned = false;
    entry.follower = this.api.followSlots(
      this.namespace,
      prewarm,
      (leases) => {
        warned = false;
        entry.leases = leases;
        entry.version++;
        onChange(leases);
      },
      (f) => {
        entry.leases = undefined; // until listed again; tries list for themselves meanwhile
        entry.version++;
        this.requests++;
        if (!warned) this.log.warn('watch of prewarm slots failed; listing and watching again with back-off', { prewarm, error: asAgentError(f.error).message, retryInMs: f.retryInMs });
        warned = true;
      },
    );
    this.open.set(prewarm, entry as { follower: PrewarmFollower; leases?: SlotLease[]; version: number });
  }

  /** True while the prewarm's slots are followed (listed yet or not). */
  watching(prewarm: string): boolean {
    return this.open.has(prewarm);
  }

  /** The prewarm's slots as last seen, or undefined when not followed (or not listed yet). */
  leases(prewarm: string): SlotLease[] | undefined {
    return this.open.get(prewarm)?.leases;
  }

  /** The prewarm's slots as last seen (undefined when not followed or not listed yet) and a count of the changes seen. */
  view(prewarm: string): SlotView {
    const e = this.open.get(prewarm);
    return { leases: e?.leases, version: e?.version ?? 0 };
  }

  /** Stops following the prewarm's slots. */
  close(prewarm: string): void {
    const e = this.open.get(prewarm);
    if (!e) return;
    this.open.delete(prewarm);
    void e.follower.stop().catch(() => undefined);
  }

  /** Stops following every prewarm's slots. */
  async closeAll(): Promise<void> {
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.all(all.map((e) => e.follower.stop().catch(() => undefined)));
  }
}

/**
 * When this node should try for a slot, and which, after the slots changed: nothing to try when none is free
 * (then: when the first held one expires, if it is not renewed, as `expiresInMs`). Nodes take slots roughly
 * in the stable order, so the waiting nodes just after the furthest holder go first, the k-th of them for the
 * k-th free slot, at once (the furthest holder as far as this node has seen: a holder further along that has
 * since given its slot back does not move the front back); those after the free slots wait a step each (a step should be longer than a slot
 * write takes to be seen), so that they only go when the ones before them did not. A node behind the furthest
 * holder (it lost a race, or its turn passed) goes one to four steps after the nodes in line: it takes a slot
 * they left. Usually one node tries per free slot.
 */
export function handoffDelay(
  index: ReadonlyMap<string, number>,
  node: string,
  prewarm: string,
  leases: SlotLease[],
  parallel: number,
  nowMs: number,
  stepMs = 25,
  frontSeen = -1,
): { tryInMs?: number; slot?: number; expiresInMs?: number; front: number } {
  const slots = bySlot(prewarm, leases);
  const free: number[] = [];
  let front = frontSeen;
  let firstExpiry = Infinity;
  for (let i = 0; i < parallel; i++) {
    const l = slots[i];
    if (!l || slotFree(l, nowMs)) {
      free.push(i);
      continue;
    }
    front = Math.max(front, index.get(l.holder) ?? -1);
    firstExpiry = Math.min(firstExpiry, l.renewMs + l.durationSeconds * 1000);
  }
  const expiresInMs = Number.isFinite(firstExpiry) ? Math.max(0, firstExpiry - nowMs) : undefined;
  if (free.length === 0) return { expiresInMs, front };
  const me = index.get(node) ?? 0;
  // A node behind the furthest holder is late (it lost a race, or its turn passed): it goes after the nodes in
  // line, within a few steps (by its name), for a slot of its own choosing by name, as nobody can tell how many
  // such are waiting.
  if (me < front) {
    const k = Number(rankKey(prewarm, node) % 1024n);
    return { tryInMs: (1 + (k % 4)) * stepMs, slot: free[k % free.length], expiresInMs, front };
  }
  const rank = me - front - 1;
  return { tryInMs: Math.min(2000, Math.max(0, rank - free.length + 1) * stepMs), slot: free[rank % free.length], expiresInMs, front };
}

/** The slots as a watch shows them: undefined while there is no view (not listed yet, or the watch failed). */
export interface SlotView {
  leases?: SlotLease[];
  /** Counts the changes seen; equal versions mean nothing was seen to change in between. */
  version: number;
}

/** What a waiting node remembers of its tries for one prewarm's slots. */
export interface TryState {
  /** When it tries for a free slot it is in line for (anchored when the free slots were first seen as they are), ms. */
  tryAt?: number;
  /** The free slots tryAt was anchored to. */
  freeSeen?: string;
  /** The place in the order of the furthest holder seen (see handoffDelay). */
  front?: number;
  /** The view's version at its last lost try with the view, and when that was (ms). */
  lostVersion?: number;
  lostAt?: number;
  /** When it last read the slots itself (a try with a list), ms. */
  listedAt?: number;
}

/**
 * What a waiting node near the front does about the slots now: try (with the watched view: one write, or with a
 * list of its own when there is no view or the view has not moved since a try with it was lost) or wait (a
 * change seen through the watch wakes it sooner). The view only decides when to try, never whether:
 * - no view: a try with a list, at most every pollMs;
 * - a slot this node still holds (its agent restarted): a try now (it is renewed);
 * - the view unchanged since a lost try with it: a try with a list once pollMs has passed since;
 * - a free slot (given back, or expired by now) this node is in line for: a try with the view at its turn
 *   (see handoffDelay), counted from when the free slots were first seen as they are;
 * - none free: a wait until the first lease would expire (plus a margin), at most pollMs (checking costs no
 *   request), and a try with a list when the node has not read the slots itself for maxPollMs.
 * Updates st (tryAt) as it decides.
 */
export function nextSlotMove(
  index: ReadonlyMap<string, number>,
  node: string,
  prewarm: string,
  view: SlotView,
  st: TryState,
  parallel: number,
  nowMs: number,
  o: { pollMs: number; maxPollMs: number; stepMs: number },
): { try: 'view' | 'list'; slot?: number } | { wait: number } {
  const sinceList = nowMs - (st.listedAt ?? -Infinity);
  if (!view.leases) {
    st.tryAt = undefined;
    return sinceList >= o.pollMs ? { try: 'list' } : { wait: o.pollMs - sinceList };
  }
  const mine = view.leases.find((l) => l.holder === node && slotIndex(prewarm, l.name) < parallel);
  if (mine && !slotFree(mine, nowMs)) return { try: 'view' };
  if (st.lostVersion === view.version) {
    const sinceLost = nowMs - (st.lostAt ?? -Infinity);
    return sinceLost >= o.pollMs ? { try: 'list' } : { wait: o.pollMs - sinceLost };
  }
  const h = handoffDelay(index, node, prewarm, view.leases, parallel, nowMs, o.stepMs, st.front);
  st.front = h.front;
  // A turn counts from when the free slots were seen as they are now: when others take and give back slots
  // meanwhile, the nodes in line change, and a turn computed before would let a node jump the line.
  const free = freeSlots(prewarm, view.leases, parallel, nowMs).join(',');
  if (st.freeSeen !== free) {
    st.tryAt = undefined;
    st.freeSeen = free;
  }
  if (h.tryInMs === undefined) {
    if (sinceList >= o.maxPollMs) return { try: 'list' };
    const expiry = h.expiresInMs === undefined ? Infinity : h.expiresInMs + 100;
    return { wait: Math.max(1, Math.min(expiry, o.pollMs, o.maxPollMs - sinceList)) };
  }
  const at = Math.min(st.tryAt ?? Infinity, nowMs + h.tryInMs);
  st.tryAt = at;
  if (at > nowMs) return { wait: at - nowMs };
  return { try: 'view', slot: h.slot };
}

/** The numbers of the free slots (given back, never taken, or expired by nowMs). */
export function freeSlots(prewarm: string, leases: SlotLease[], parallel: number, nowMs: number): number[] {
  const slots = bySlot(prewarm, leases);
  const free: number[] = [];
  for (let i = 0; i < parallel; i++) {
    const l = slots[i];
    if (!l || slotFree(l, nowMs)) free.push(i);
  }
  return free;
}

/** The leases by slot number, worked out once per list (every waiting node looks at each list after each change). */
const slotArrays = new WeakMap<SlotLease[], { prewarm: string; slots: (SlotLease | undefined)[] }>();
function bySlot(prewarm: string, leases: SlotLease[]): (SlotLease | undefined)[] {
  const known = slotArrays.get(leases);
  if (known && known.prewarm === prewarm) return known.slots;
  const slots: (SlotLease | undefined)[] = [];
  for (const l of leases) {
    const i = slotIndex(prewarm, l.name);
    if (i < Number.MAX_SAFE_INTEGER) slots[i] = l;
  }
  slotArrays.set(leases, { prewarm, slots });
  return slots;
}
