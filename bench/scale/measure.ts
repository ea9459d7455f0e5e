// What the scale harness measures (issue 42): process CPU and memory from /proc, the API server's own metrics, and
// its audit log (scripts/scale-sandbox with INPLACE_SCALE_AUDIT=1), which names the user of every request, so the
// coordinator's requests, the node agents', kwok's and the control plane's are counted apart.
import { readFileSync } from 'node:fs';

const TCK = 100;

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat, counted from after the command name (field 3 is f[0]).
  return (Number(f[11]) + Number(f[12])) / TCK;
}

/** Resident memory of a process now and at its peak, MiB. */
export function rssMiB(pid: number): { now: number; peak: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)?.[1] ?? 0);
  return { now: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** Sums of a Prometheus metric's samples, grouped by the values of `by` (joined with a space). */
export function metricSums(text: string, name: string, by: string[]): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^${name}\\{([^}]*)\\} (\\S+)`, 'gm');
  for (const m of text.matchAll(re)) {
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    const key = by.map((b) => labels[b] ?? '').join(' ');
    out.set(key, (out.get(key) ?? 0) + Number(m[2]));
  }
  return out;
}

/** b - a for every key of b (positive differences only). */
export function delta(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of b) {
    const d = v - (a.get(k) ?? 0);
    if (d > 0) out.set(k, d);
  }
  return out;
}

/** Who sent a request, by its audit record's user. */
export type Actor = 'coordinator' | 'node agents' | 'kwok' | 'controller-manager' | 'scheduler' | 'harness' | 'other';

/** One request: who, verb, resource[/subresource]. */
export interface Request {
  actor: Actor;
  verb: string;
  resource: string;
  /** The node whose agent sent it (node agents only). */
  node?: string;
}

interface AuditEvent {
  stage: string;
  verb: string;
  requestReceivedTimestamp: string;
  user: { username: string; extra?: Record<string, string[]> };
  objectRef?: { resource?: string; subresource?: string };
}

function actorOf(e: AuditEvent, coordinatorNode: string): { actor: Actor; node?: string } {
  const u = e.user.username;
  if (u === 'system:serviceaccount:inplace-system:inplace-agent') {
    const node = e.user.extra?.['authentication.kubernetes.io/node-name']?.[0];
    return node === coordinatorNode ? { actor: 'coordinator' } : { actor: 'node agents', node };
  }
  if (u === 'kwok') return { actor: 'kwok' };
  if (u === 'admin') return { actor: 'harness' };
  if (u === 'system:kube-scheduler') return { actor: 'scheduler' };
  if (u === 'system:kube-controller-manager' || u.startsWith('system:serviceaccount:kube-system:')) return { actor: 'controller-manager' };
  return { actor: 'other' };
}

/**
 * The requests of the audit log received in [fromMs, toMs): one a request (a watch counted when it starts, any
 * other request when it completes).
 */
export function auditRequests(file: string, fromMs: number, toMs: number, coordinatorNode: string): Request[] {
  const out: Request[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line) as AuditEvent;
    if (e.verb === 'watch' ? e.stage !== 'ResponseStarted' : e.stage !== 'ResponseComplete') continue;
    const at = Date.parse(e.requestReceivedTimestamp);
    if (at < fromMs || at >= toMs) continue;
    const r = e.objectRef?.resource ?? '(none)';
    out.push({ ...actorOf(e, coordinatorNode), verb: e.verb, resource: e.objectRef?.subresource ? `${r}/${e.objectRef.subresource}` : r });
  }
  return out;
}

/** Whether a verb only reads. */
export const isRead = (verb: string) => verb === 'get' || verb === 'list' || verb === 'watch';

/** Creates the API server answers without storing anything (access reviews, token requests). */
const UNSTORED = new Set(['subjectaccessreviews', 'selfsubjectaccessreviews', 'localsubjectaccessreviews', 'tokenreviews', 'serviceaccounts/token']);

/** Whether a request writes to etcd: not a read, not an access review. */
export const isStoredWrite = (r: Request) => !isRead(r.verb) && !UNSTORED.has(r.resource);

/** Whether a request is an access review (answered by the authorizer, stored nowhere). */
export const isReview = (r: Request) => UNSTORED.has(r.resource) && r.resource !== 'serviceaccounts/token';
