// Who pulls after whom: slots are handed on along the stable order instead of raced for. With S seeds and P slots
// (maxParallelNodes), the node at place p of the order (0-based):
//
//   seeds      p < S        the first min(S, P) create slot p; a seed p >= P is handed slot p % P by seed p - P
//   first round S <= p < S+P  once the seeds are done, creates slot p - S
//   the rest   p >= S+P     is handed the slot of node p - P when that node is done
//
// A node done with its slot writes the Lease over to its successor (holder and turn label: one write, the one
// a delete would have been); the successor hears it through its standing watch of the Leases that name it, and
// pulls with no request of its own to get the slot. The successor of a seed p is seed p + P (none past the
// seeds: the first round starts by itself); of any other node, node p + P; without one the Lease is deleted.
// A chain breaks when a node dies (its Lease expires) or is not waiting (done, or backing off: it gives a Lease
// handed to it back): then the nodes whose turn has come, and who were not handed a slot, read the slots
// themselves now and then and take a free or expired one (`chainMove`), as late nodes (an agent that restarted
// after its turn) and nodes a refresh sends back to Waiting do.

/** A node's part in the hand-on order of one prewarm generation. */
export interface ChainPlace {
  /** Its place in the stable order (0-based). */
  place: number;
  /** `start`: creates its slot (`home`) when it may go; `handed`: waits for a predecessor to hand it one. */
  role: 'start' | 'handed';
  /** The slot it creates (start) or is normally handed (handed). */
  home: number;
  /** Whether it waits for the seeds before it goes (the first round after them). */
  afterSeeds: boolean;
  /** The node it hands its slot to when done, if any. */
  successor?: string;
  /** The prewarm's slots (maxParallelNodes, at least 1). */
  parallel: number;
}

/** The node's place in the hand-on order, or undefined when it is not in the order. */
export function chainPlace(order: readonly string[], index: ReadonlyMap<string, number>, node: string, seeds: number, parallel: number): ChainPlace | undefined {
  const p = index.get(node);
  if (p === undefined) return undefined;
  const P = Math.max(1, parallel);
  const S = Math.max(0, Math.min(seeds, order.length));
  const next = p < S ? (p + P < S ? order[p + P] : undefined) : order[p + P];
  if (p < S) return { place: p, role: p < P ? 'start' : 'handed', home: p % P, afterSeeds: false, successor: next, parallel: P };
  const q = p - S;
  // Only the first round waits for the seeds: the nodes after it are handed slots the first round had.
  return { place: p, role: q < P ? 'start' : 'handed', home: q % P, afterSeeds: S > 0 && q < P, successor: next, parallel: P };
}

/** What a waiting node remembers of one prewarm generation's slots. */
export interface ChainState {
  /** It tried to create its home slot (and did not get it). */
  homeTried?: boolean;
  /** When it last read the slots itself (a try with a list), ms. */
  listedAt?: number;
  /** Since when its turn has come, as far as it knows (see chainMove), ms. */
  dueSince?: number;
}

/** The timing chainMove needs, ms. */
export interface ChainTiming {
  /** Between two reads of the slots by a node whose turn came and that was not handed a slot. */
  fallbackMs: number;
  /** The longest wait between two looks (a hand-on or a new summary wakes the node sooner). */
  maxPollMs: number;
}

/**
 * What a waiting node with no slot handed to it does now (the seeds, if it waits for them, are done):
 * - `start` nodes create their home slot, once; after that they are late (the slot was taken): below.
 * - A node's turn has come when the summary says at least place - P nodes are done (its predecessor's round),
 *   or, with no summary of this generation yet, from when it first saw the generation. Before that it waits:
 *   a hand-on wakes it.
 * - Once its turn has come it reads the slots itself (a list, and a write for a free or expired one) every
 *   fallbackMs, the first fallbackMs after the turn came: a living predecessor hands on well before.
 * Updates st (dueSince) as it decides.
 */
export function chainMove(
  c: ChainPlace,
  st: ChainState,
  summary: { done: number } | undefined,
  firstSeenMs: number,
  nowMs: number,
  o: ChainTiming,
): { try: 'home' | 'list' } | { wait: number } {
  if (c.role === 'start' && !st.homeTried) return { try: 'home' };
  let since: number;
  if (c.role === 'start') since = st.dueSince ??= nowMs; // its home slot was taken: it is late
  else if (!summary) since = firstSeenMs; // not remembered: a summary that comes may say the turn is still ahead
  else if (summary.done >= c.place - c.parallel) since = st.dueSince ??= nowMs;
  else {
    st.dueSince = undefined;
    return { wait: o.maxPollMs };
  }
  const next = Math.max(since, st.listedAt ?? -Infinity) + o.fallbackMs;
  return next <= nowMs ? { try: 'list' } : { wait: Math.min(next - nowMs, o.maxPollMs) };
}
