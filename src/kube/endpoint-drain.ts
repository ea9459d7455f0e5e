// Drain before a stop: once the agent's condition is False, a pod that gates its readiness on it turns
// NotReady and the EndpointSlice controller marks its address not ready, so Services stop sending it traffic.
// This waits, by watching the slices (not a fixed sleep), until the address is no longer a ready endpoint of
// any slice that held it, bounded by the drain time.
import type { V1EndpointSlice } from './client.js';
import type { Clock } from '../clock.js';
import type { KubeApi } from './kube-api.js';

/** Names of the slices in which the pod (by IP or target UID) is a ready endpoint. */
export function slicesHolding(slices: V1EndpointSlice[], ip: string, podUid: string): string[] {
  return slices
    .filter((s) =>
      (s.endpoints ?? []).some(
        (e) => e.conditions?.ready !== false && (e.addresses.includes(ip) || (podUid !== '' && e.targetRef?.kind === 'Pod' && e.targetRef.uid === podUid)),
      ),
    )
    .map((s) => s.metadata?.name ?? '');
}

/** How a drain ended. */
export interface DrainResult {
  /** True when the address left every slice in time (or was in none). */
  drained: boolean;
  /** Slices that held the address when the drain began. */
  slices: string[];
  /** Slices that still held it when the bound was reached. */
  left: string[];
  waitedMs: number;
}

/** Waits until no slice of the namespace holds the pod as a ready endpoint, at most boundMs. */
export async function waitDrained(api: KubeApi, namespace: string, ip: string, podUid: string, boundMs: number, clock: Clock, pollMs = 100): Promise<DrainResult> {
  const began = clock.now();
  const first = slicesHolding(await api.listEndpointSlices(namespace), ip, podUid);
  let held = first;
  while (held.length > 0) {
    const waited = clock.now() - began;
    if (waited >= boundMs) return { drained: false, slices: first, left: held, waitedMs: waited };
    await clock.sleep(Math.min(pollMs, boundMs - waited));
    const now = slicesHolding(await api.listEndpointSlices(namespace), ip, podUid);
    held = held.filter((name) => now.includes(name));
  }
  return { drained: true, slices: first, left: [], waitedMs: clock.now() - began };
}
