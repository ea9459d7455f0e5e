// The API server's own count of the requests it served (apiserver_request_total on its /metrics), for benchmarks
// that report how many writes a change cost: read before and after, subtract.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The verbs that change state (apiserver_request_total's verb label). */
export const WRITE_VERBS = ['POST', 'PUT', 'PATCH', 'DELETE', 'DELETECOLLECTION', 'APPLY'];

/** Requests served so far, by verb. */
export type VerbCounts = Record<string, number>;

/** Sums apiserver_request_total by verb from a /metrics text. */
export function countsByVerb(metrics: string): VerbCounts {
  const out: VerbCounts = {};
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const verb = line.match(/[{,]verb="([A-Z]+)"/)?.[1];
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (verb && Number.isFinite(value)) out[verb] = (out[verb] ?? 0) + value;
  }
  return out;
}

/** The API server's counts now, read with kubectl (admin kubeconfig). */
export async function apiserverCounts(kubectl: string, kubeconfig: string): Promise<VerbCounts> {
  const { stdout } = await run(kubectl, ['--kubeconfig', kubeconfig, 'get', '--raw', '/metrics'], { maxBuffer: 64 * 1024 * 1024 });
  return countsByVerb(stdout);
}

/** Write requests between two readings, by verb (only verbs that moved), and their total. */
export function writesBetween(a: VerbCounts, b: VerbCounts): { total: number; byVerb: VerbCounts } {
  const byVerb: VerbCounts = {};
  for (const v of WRITE_VERBS) {
    const d = (b[v] ?? 0) - (a[v] ?? 0);
    if (d > 0) byVerb[v] = d;
  }
  return { total: Object.values(byVerb).reduce((x, y) => x + y, 0), byVerb };
}
