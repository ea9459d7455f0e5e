// Who wrote the Events of a benchmark run, and why: the namespace's Events read before and after, each new Event
// counted as one POST and each rise of an Event's count as one PATCH (the way the kubelet's and the controllers'
// recorders fold a repeat into the Event already written), grouped by the reporter and the reason. The API
// server's own counts (apiserver-writes.ts) say how many Event writes there were; this says whose they were.
import type { CoreV1Api, CoreV1Event } from '@kubernetes/client-node';

/** The namespace's Events now: uid to the Event. */
export type EventSnapshot = Map<string, CoreV1Event>;

export async function readEvents(core: CoreV1Api, namespace: string): Promise<EventSnapshot> {
  const list = await core.listNamespacedEvent({ namespace });
  return new Map(list.items.map((e) => [e.metadata?.uid ?? '', e]));
}

/** Event writes between two snapshots, by `REPORTER REASON`. */
export interface EventWrites {
  [reporterReason: string]: { post: number; patch: number };
}

const reporter = (e: CoreV1Event) => e.reportingComponent || e.source?.component || '?';
const count = (e: CoreV1Event) => e.count ?? e.series?.count ?? 1;

export function eventWrites(before: EventSnapshot, after: EventSnapshot): EventWrites {
  const out: EventWrites = {};
  for (const [uid, e] of after) {
    const key = `${reporter(e)} ${e.reason ?? '?'}`;
    const was = before.get(uid);
    const post = was ? 0 : 1;
    const patch = Math.max(0, count(e) - (was ? count(was) : 1));
    if (post + patch === 0) continue;
    const cell = (out[key] ??= { post: 0, patch: 0 });
    cell.post += post;
    cell.patch += patch;
  }
  return out;
}

/** One line: `kubelet Killing 1.0+0.0, ...` per pod (POST + PATCH), most first. */
export function eventLine(w: EventWrites, pods: number): string {
  const rows = Object.entries(w).sort((a, b) => b[1].post + b[1].patch - (a[1].post + a[1].patch));
  if (rows.length === 0) return 'no Event written';
  return rows.map(([k, v]) => `${k} ${(v.post / pods).toFixed(1)}+${(v.patch / pods).toFixed(1)}`).join(', ');
}
