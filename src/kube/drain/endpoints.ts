// What the EndpointSlices say about one pod's address, as pure functions of the slices: whether it is a ready
// endpoint, in which slices, and how many ready endpoints each Service that held it has left.
import type { V1EndpointSlice } from '../../k8s/client.js';

/** The label an EndpointSlice names its Service with. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** One pod's address, by IP and by the Pod's UID (a slice may name either). */
export interface PodAddress {
  ip: string;
  podUid: string;
}

type Endpoint = NonNullable<V1EndpointSlice['endpoints']>[number];

function isPod(e: Endpoint, a: PodAddress): boolean {
  return e.addresses.includes(a.ip) || (a.podUid !== '' && e.targetRef?.kind === 'Pod' && e.targetRef.uid === a.podUid);
}

/** A ready endpoint, as Services route to it (an absent condition counts as ready, as the API says). */
function isReady(e: Endpoint): boolean {
  return e.conditions?.ready !== false;
}

/** Names of the slices in which the pod is a ready endpoint. */
export function slicesHolding(slices: V1EndpointSlice[], a: PodAddress): string[] {
  return slices.filter((s) => (s.endpoints ?? []).some((e) => isReady(e) && isPod(e, a))).map((s) => s.metadata?.name ?? '');
}

/** Names of the slices that list the pod at all (ready or not). */
export function slicesListing(slices: V1EndpointSlice[], a: PodAddress): string[] {
  return slices.filter((s) => (s.endpoints ?? []).some((e) => isPod(e, a))).map((s) => s.metadata?.name ?? '');
}

/** Names of the Services whose slices list the pod at all (ready or not). */
export function servicesListing(slices: V1EndpointSlice[], a: PodAddress): string[] {
  const names = new Set<string>();
  for (const s of slices) {
    if ((s.endpoints ?? []).some((e) => isPod(e, a))) names.add(serviceOf(s));
  }
  return [...names];
}

/** Per Service named: its ready endpoints other than the pod, over all of its slices. */
export function readyOthers(slices: V1EndpointSlice[], services: string[], a: PodAddress): Map<string, number> {
  const out = new Map(services.map((s) => [s, 0]));
  for (const s of slices) {
    const svc = serviceOf(s);
    if (!out.has(svc)) continue;
    const n = (s.endpoints ?? []).filter((e) => isReady(e) && !isPod(e, a)).length;
    out.set(svc, (out.get(svc) ?? 0) + n);
  }
  return out;
}

/** Per Service named: all of its ready endpoints, the pod included. */
export function readyCounts(slices: V1EndpointSlice[], services: string[]): Map<string, number> {
  const out = new Map(services.map((s) => [s, 0]));
  for (const s of slices) {
    const svc = serviceOf(s);
    if (!out.has(svc)) continue;
    out.set(svc, (out.get(svc) ?? 0) + (s.endpoints ?? []).filter(isReady).length);
  }
  return out;
}

/** The Service a slice belongs to (its label; the slice's own name when it has none). */
export function serviceOf(s: V1EndpointSlice): string {
  return s.metadata?.labels?.[SERVICE_NAME_LABEL] ?? `slice/${s.metadata?.name ?? ''}`;
}
