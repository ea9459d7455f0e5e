// The stable order of a prewarm's nodes: every agent computes the same order from the node names alone, so
// seeds and the summarizing agent are agreed on without talking.
import { createHash } from 'node:crypto';

/** A node's rank key: the first 8 bytes of sha256(prewarm name + "/" + node name), as a bigint. */
export function rankKey(prewarm: string, node: string): bigint {
  return createHash('sha256').update(`${prewarm}/${node}`).digest().readBigUInt64BE(0);
}

/** The last order computed, kept for the next caller with the same prewarm and node list. */
let last: { key: string; order: readonly string[] } | undefined;

/**
 * The nodes in the prewarm's stable order (ties, which sha256 makes unlikely, broken by name). The last result
 * is reused for the same input: one process that runs many agents (the benchmark) computes it once.
 */
export function stableOrder(prewarm: string, nodes: Iterable<string>): string[] {
  const unique = [...new Set(nodes)];
  const key = `${prewarm}\n${unique.join('\n')}`;
  if (last?.key === key) return [...last.order];
  const keyed = unique.map((n) => ({ n, k: rankKey(prewarm, n) }));
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : a.n < b.n ? -1 : a.n > b.n ? 1 : 0));
  const order = keyed.map((x) => x.n);
  last = { key, order };
  return [...order];
}

/** The seed nodes: the first `count` of the stable order. */
export function seedsOf(order: string[], count: number): string[] {
  return order.slice(0, Math.max(0, Math.min(count, order.length)));
}
