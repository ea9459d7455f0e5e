// A coordinator's budgets, as the stock workload controllers compute them from live pods: maxUnavailable (an
// integer, or a percent of the pods) and partition (the last pods in update order keep the older version).

/** maxUnavailable when none is given. */
export const DEFAULT_MAX_UNAVAILABLE = 1;

/** maxUnavailable as a number of pods: an integer as is; a percent of total, rounded down; at least 1. */
export function resolveMaxUnavailable(v: number | string | undefined, total: number): number {
  if (v === undefined) return DEFAULT_MAX_UNAVAILABLE;
  if (typeof v === 'number') return Math.max(1, Math.floor(v));
  const m = v.match(/^(\d+)%$/);
  if (!m) return Math.max(1, Math.floor(Number(v)) || DEFAULT_MAX_UNAVAILABLE);
  return Math.max(1, Math.floor((total * Number(m[1])) / 100));
}

/** The items of order (in update order) that partition leaves to update: all but its last `partition`. */
export function inPartition<T>(order: readonly T[], partition: number | undefined): T[] {
  return order.slice(0, Math.max(0, order.length - (partition ?? 0)));
}
