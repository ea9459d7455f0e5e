// Pods <-> the agent API's wire types (ListPods): what the agent sends, and what a client prints.
import type { PodView } from '../engine/engine.js';
import type { Pod as WirePod } from '../gen/inplace/v1/Pod.js';
import type { ListPodsResponse__Output } from '../gen/inplace/v1/ListPodsResponse.js';

/** A pod view as sent by ListPods: containers by name (then newest attempt first), the exit code only once exited. */
export function podToWire(v: PodView): WirePod {
  const containers = [...v.containers].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : b.attempt - a.attempt));
  return {
    id: v.pod.id,
    name: v.pod.name,
    namespace: v.pod.namespace,
    uid: v.pod.uid,
    state: v.pod.state,
    ip: v.pod.ip,
    attempt: v.pod.attempt,
    createdAtUnixMs: String(v.pod.createdAt.getTime()),
    containers: containers.map((c) => ({
      id: c.id,
      name: c.name,
      image: c.image,
      imageId: c.imageId,
      state: c.state,
      attempt: c.attempt,
      createdAtUnixMs: String(c.createdAt.getTime()),
      startedAtUnixMs: String(c.startedAt?.getTime() ?? 0),
      ...(c.exitCode !== undefined ? { exitCode: c.exitCode } : {}),
    })),
  };
}

/** A container as a client sees it: times in RFC 3339, startedAt once started, exitCode once exited. */
export interface PodContainerView {
  id: string;
  name: string;
  image: string;
  imageId: string;
  state: string;
  attempt: number;
  createdAt: string;
  startedAt?: string;
  exitCode?: number;
}

/** A pod as a client sees it (what `inplacectl pods` prints, `-o json` included). */
export interface PodItemView {
  id: string;
  name: string;
  namespace: string;
  uid: string;
  state: string;
  /** Absent when the pod has no IP of its own. */
  ip?: string;
  attempt: number;
  createdAt: string;
  containers: PodContainerView[];
}

/** ListPods as a client sees it. */
export interface PodListView {
  runtime: string;
  pods: PodItemView[];
}

/** Unix ms on the wire (a decimal string) as an RFC 3339 time; undefined for 0 (not known). */
function rfc3339(ms: string | number): string | undefined {
  const n = Number(ms);
  return n > 0 ? new Date(n).toISOString() : undefined;
}

/** The client's view of ListPods: nothing filled in, containers by name. */
export function podsFromWire(w: ListPodsResponse__Output): PodListView {
  return {
    runtime: w.runtime,
    pods: w.pods.map((p) => {
      const pod: PodItemView = { id: p.id, name: p.name, namespace: p.namespace, uid: p.uid, state: p.state, attempt: p.attempt, createdAt: rfc3339(p.createdAtUnixMs) ?? '', containers: [] };
      if (p.ip) pod.ip = p.ip;
      else delete pod.ip;
      pod.containers = p.containers
        .map((c) => {
          const v: PodContainerView = { id: c.id, name: c.name, image: c.image, imageId: c.imageId, state: c.state, attempt: c.attempt, createdAt: rfc3339(c.createdAtUnixMs) ?? '' };
          const started = rfc3339(c.startedAtUnixMs);
          if (started) v.startedAt = started;
          if (c.exitCode !== undefined && c.exitCode !== null) v.exitCode = c.exitCode;
          return v;
        })
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : b.attempt - a.attempt));
      return pod;
    }),
  };
}
