// The API server's own count of the requests it served (apiserver_request_total on its /metrics), for benchmarks
// that report how many writes a change cost and where they went: read before and after, subtract, and take off
// what the idle cluster writes anyway over the same time (node heartbeats, leader leases, the agents' own leases).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The verbs that change state (apiserver_request_total's verb label). */
export const WRITE_VERBS = ['POST', 'PUT', 'PATCH', 'DELETE', 'DELETECOLLECTION', 'APPLY'];

/** Write requests served so far, by `RESOURCE[/SUBRESOURCE] VERB` (e.g. `pods/status PATCH`). */
export type WriteCounts = Record<string, number>;

/** One reading of the counts, with when it was taken (ms, performance.now()). */
export interface Reading {
  at: number;
  counts: WriteCounts;
}

/** Sums apiserver_request_total's write verbs by resource, subresource and verb from a /metrics text. */
export function writeCounts(metrics: string): WriteCounts {
  const out: WriteCounts = {};
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const label = (name: string) => line.match(new RegExp(`[{,]${name}="([^"]*)"`))?.[1] ?? '';
    const verb = label('verb');
    if (!WRITE_VERBS.includes(verb)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (!Number.isFinite(value)) continue;
    const sub = label('subresource');
    const key = `${label('resource') || '(none)'}${sub ? `/${sub}` : ''} ${verb}`;
    out[key] = (out[key] ?? 0) + value;
  }
  return out;
}

/** The API server's write counts now, read with kubectl (admin kubeconfig). */
export async function readWrites(kubectl: string, kubeconfig: string): Promise<Reading> {
  const { stdout } = await run(kubectl, ['--kubeconfig', kubeconfig, 'get', '--raw', '/metrics'], { maxBuffer: 64 * 1024 * 1024 });
  return { at: performance.now(), counts: writeCounts(stdout) };
}

/**
 * Write verbs on resources the API server answers without storing anything (reviews, token requests): they
 * cost a request, not an object in etcd nor a watch event, so a report shows them apart.
 */
export const UNSTORED = /^(subjectaccessreviews|selfsubjectaccessreviews|localsubjectaccessreviews|selfsubjectrulesreviews|selfsubjectreviews|tokenreviews|serviceaccounts\/token) /;

/** The part of w on stored resources (UNSTORED left out). */
export function stored(w: Writes): Writes {
  const byKey = Object.fromEntries(Object.entries(w.byKey).filter(([k]) => !UNSTORED.test(k)));
  return { total: sum(byKey), byKey };
}

/** What one window between two readings wrote: by key (only keys that moved), and in all. */
export interface Writes {
  total: number;
  byKey: WriteCounts;
}

/** Writes between two readings. */
export function writesBetween(a: Reading, b: Reading): Writes {
  const byKey: WriteCounts = {};
  for (const [k, v] of Object.entries(b.counts)) {
    const d = v - (a.counts[k] ?? 0);
    if (d > 0) byKey[k] = d;
  }
  return { total: sum(byKey), byKey };
}

/**
 * The writes of a measured window less the background: `idle` is what the cluster wrote over an idle window
 * (before the measured one, nothing of the benchmark running), scaled to the measured window's length. A key
 * never goes below 0; the background total is returned beside the net, so a report can show both.
 */
export function netOfIdle(measured: Writes, measuredMs: number, idle: Writes, idleMs: number): Writes & { background: number } {
  const scale = idleMs > 0 ? measuredMs / idleMs : 0;
  const byKey: WriteCounts = {};
  let background = 0;
  for (const [k, v] of Object.entries(measured.byKey)) {
    const bg = Math.min(v, (idle.byKey[k] ?? 0) * scale);
    background += bg;
    if (v - bg > 0) byKey[k] = v - bg;
  }
  return { total: sum(byKey), byKey, background };
}

/** The keys of writes, most first, each as `KEY N` per pod (one decimal). */
export function perPod(w: Writes, pods: number, top = 8): string {
  return Object.entries(w.byKey)
    .sort((x, y) => y[1] - x[1])
    .slice(0, top)
    .map(([k, v]) => `${k} ${(v / pods).toFixed(1)}`)
    .join(', ');
}

function sum(c: WriteCounts): number {
  return Object.values(c).reduce((x, y) => x + y, 0);
}
