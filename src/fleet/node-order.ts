// The stable order of a prewarm's nodes: every agent computes the same order from the node names alone, so
// seeds and the summarizing agent are agreed on without talking.
import { createHash } from 'node:crypto';

/** A node's rank key: the first 8 bytes of sha256(prewarm name + "/" + node name), as a bigint. */
export function rankKey(prewarm: string, node: string): bigint {
  return createHash('sha256').update(`${prewarm}/${node}`).digest().readBigUInt64BE(0);
}

/** The nodes in the prewarm's stable order (ties, which sha256 makes unlikely, broken by name). */
export function stableOrder(prewarm: string, nodes: Iterable<string>): string[] {
  const keyed = [...new Set(nodes)].map((n) => ({ n, k: rankKey(prewarm, n) }));
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : a.n < b.n ? -1 : a.n > b.n ? 1 : 0));
  return keyed.map((x) => x.n);
}

/** The seed nodes: the first `count` of the stable order. */
export function seedsOf(order: string[], count: number): string[] {
  return order.slice(0, Math.max(0, Math.min(count, order.length)));
}
