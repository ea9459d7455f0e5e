// Budget, the planner's second stage: the partition's scope and the maxUnavailable left, both computed from the
// live pods of one snapshot, as the stock StatefulSet and DaemonSet controllers compute them. Pure.
import { imageMatches } from '../../image-ref.js';
import type { PodView, RestartView, WorkloadView } from './plan-types.js';
import { inPartition, resolveMaxUnavailable } from '../kit/budget.js';

/** The pods in update order, and the names of those the partition leaves to update. */
export interface Scope {
  order: PodView[];
  inScope: Set<string>;
}

/** How many more pods may become unavailable now, and what that was computed from. */
export interface Budget {
  maxUnavailable: number;
  /** Pods the controller has yet to create. */
  missing: number;
  /** maxUnavailable less the pods unavailable, in flight and not back, or missing (may be negative). */
  room: number;
  /** When a pod Ready but not yet for minReadySeconds becomes available (no event says so). */
  dueMs: number[];
}

/** Update order (StatefulSet: highest ordinal first; otherwise node, then name) and the partition's scope. */
export function scopeOf(w: WorkloadView, pods: PodView[], partition: number): Scope {
  if (w.kind === 'StatefulSet') {
    const order = [...pods].sort((a, b) => (b.ordinal ?? -1) - (a.ordinal ?? -1));
    return { order, inScope: new Set(order.filter((p) => (p.ordinal ?? -1) >= partition).map((p) => p.name)) };
  }
  const order = [...pods].sort((a, b) => ((a.nodeName ?? '') < (b.nodeName ?? '') ? -1 : (a.nodeName ?? '') > (b.nodeName ?? '') ? 1 : a.name < b.name ? -1 : 1));
  return { order, inScope: new Set(inPartition(order, partition).map((p) => p.name)) };
}

/** Available as the stock controllers count it: Ready for minReadySeconds. */
export function isAvailable(p: PodView, nowMs: number, minReadyMs: number): boolean {
  return p.ready && (p.readySinceMs === undefined || nowMs - p.readySinceMs >= minReadyMs);
}

/**
 * A pod under update is back once it is available, every wanted container runs its target image and is ready,
 * and each container its restart r restarts started after r was created: before the drain it is still Ready with
 * the old containers, which does not count (a same-image restart runs the target image before it as after it).
 */
export function isBack(p: PodView, r: RestartView | undefined, wanted: { name: string; image?: string }[], nowMs: number, minReadyMs: number): boolean {
  const restarted = (name: string) =>
    !r || r.createdMs === undefined || !(r.containers ?? []).includes(name) || p.statuses?.some((s) => s.name === name && (s.startedAtMs ?? 0) > (r.createdMs as number));
  return (
    isAvailable(p, nowMs, minReadyMs) &&
    wanted.every((c) => p.containers.find((x) => x.name === c.name)?.image === c.image && restarted(c.name) && p.statuses?.some((s) => s.name === c.name && s.ready && imageMatches(s.image, c.image as string)))
  );
}

/** What budgetOf reads. */
export interface BudgetInput {
  workload: WorkloadView;
  /** The rollout's maxUnavailable; the workload's own wins. */
  maxUnavailable?: number | string;
  live: PodView[];
  /** Pods classified in flight (before this round starts any). */
  inFlight: Set<string>;
  restartOf: Map<string, RestartView>;
  wanted: { name: string; image?: string }[];
  nowMs: number;
  minReadyMs: number;
}

/** Pods not available, pods in flight and not back, and pods missing (each once), against maxUnavailable. */
export function budgetOf(b: BudgetInput): Budget {
  const { workload: w, live, nowMs, minReadyMs } = b;
  const maxUnavailable = resolveMaxUnavailable(w.maxUnavailable ?? b.maxUnavailable, w.desired);
  const unavailable = new Set(live.filter((p) => !isAvailable(p, nowMs, minReadyMs)).map((p) => p.name));
  for (const p of live) if (b.inFlight.has(p.name) && !isBack(p, b.restartOf.get(p.name), b.wanted, nowMs, minReadyMs)) unavailable.add(p.name);
  const missing = Math.max(0, w.desired - live.length);
  const dueMs = live.filter((p) => p.ready && p.readySinceMs !== undefined && p.readySinceMs + minReadyMs > nowMs).map((p) => (p.readySinceMs ?? 0) + minReadyMs);
  return { maxUnavailable, missing, room: maxUnavailable - unavailable.size - missing, dueMs };
}
