// What the data plane did during one traffic round, so that a round with failed requests explains itself: the
// node's kube-proxy sync metrics (sampled every 50 ms), the Service's rules in the nat table (iptables-save every
// 100 ms: which pod addresses its KUBE-SVC chain sends to, whether its ClusterIP and NodePort rules are there),
// and the refused connections conntrack still holds (state CLOSE, kept 10 s: whether the refusal came from a
// pod, and which, or from the host itself because no rule translated the address). Printed beside the clients'
// failures and the operations' steps on one clock (epoch ms). Read-only: it never changes a rule or an entry.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import { promisify } from 'node:util';
import { parseSyncMetrics } from '../../src/kube/drain/kube-proxy-metrics.js';
import type { RequestRecord, Tally } from './traffic.js';

const exec = promisify(execFile);

/** How often kube-proxy's metrics are read. */
const METRICS_EVERY_MS = 50;
/** How often the nat table is read. */
const RULES_EVERY_MS = 100;
/** How often conntrack is read (a refused connection stays there 10 s in state CLOSE). */
const CONNTRACK_EVERY_MS = 2000;

/** The Service whose data plane is traced. */
export interface TracedService {
  namespace: string;
  name: string;
  clusterIp: string;
  port: number;
  nodeIp: string;
  nodePort: number;
}

/** One thing that happened, on the epoch-ms clock. */
export interface TraceEvent {
  at: number;
  text: string;
}

/** A running trace. */
export interface DataPlaneTrace {
  /** Stops sampling and returns what was seen. */
  stop(): Promise<DataPlaneRecord>;
}

/** What a trace saw. */
export interface DataPlaneRecord {
  events: TraceEvent[];
  /** Refused connections to the Service's addresses (conntrack entries in state CLOSE). */
  refused: RefusedEntry[];
}

/** The Service's rules in one iptables-save of the nat table. */
export function serviceRules(natTable: string, s: TracedService): { endpoints: string[]; clusterIpRule: boolean; nodePortRule: boolean } {
  const lines = natTable.split('\n');
  const id = `${s.namespace}/${s.name}`;
  const svcChain = lines.find((l) => l.startsWith('-A KUBE-SERVICES ') && l.includes(`-d ${s.clusterIp}/32`) && l.includes(`--dport ${s.port} `))?.match(/-j (KUBE-SVC-\S+)/)?.[1];
  const endpoints = svcChain
    ? lines.filter((l) => l.startsWith(`-A ${svcChain} `) && l.includes('-j KUBE-SEP-')).map((l) => new RegExp(`${id}[^ ]* -> ([^ "]+)`).exec(l)?.[1] ?? '?')
    : [];
  const nodePortRule = lines.some((l) => l.startsWith('-A KUBE-NODEPORTS ') && l.includes(`--dport ${s.nodePort} `));
  return { endpoints: endpoints.sort(), clusterIpRule: svcChain !== undefined, nodePortRule };
}

/** One refused connection in conntrack: which client, from which local port, refused by whom. */
export interface RefusedEntry {
  client: 'clusterIp' | 'nodePort';
  /** The client's port (the original tuple's source port). */
  port: number;
  /** Where the refusal came from: a pod's address, or the host itself. */
  from: string;
}

/** Refused connections (state CLOSE) to the Service's addresses in /proc/net/nf_conntrack text, keyed by client, source port and reply source. */
export function refusedEntries(conntrack: string, s: TracedService): Map<string, RefusedEntry> {
  const out = new Map<string, RefusedEntry>();
  for (const line of conntrack.split('\n')) {
    if (!line.includes(' tcp ') || !/\sCLOSE\s/.test(line)) continue;
    const tuples = [...line.matchAll(/src=(\S+) dst=(\S+) sport=(\d+) dport=(\d+)/g)];
    if (tuples.length < 2) continue;
    const [orig, reply] = tuples as [RegExpMatchArray, RegExpMatchArray];
    const client = orig[2] === s.clusterIp && Number(orig[4]) === s.port ? 'clusterIp' : orig[2] === s.nodeIp && Number(orig[4]) === s.nodePort ? 'nodePort' : undefined;
    if (!client) continue;
    const from = reply[1] === orig[2] && reply[3] === orig[4] ? 'the host itself (no rule translated it)' : `${reply[1]}:${reply[3]}`;
    out.set(`${client} ${orig[1]}:${orig[3]} ${from}`, { client, port: Number(orig[3]), from });
  }
  return out;
}

/** Starts tracing the data plane of a Service (kube-proxy's metrics at metricsUrl, the nat table, conntrack). */
export function traceDataPlane(metricsUrl: string, s: TracedService): DataPlaneTrace {
  const events: TraceEvent[] = [];
  const refused = new Map<string, RefusedEntry>();
  let running = true;
  let lastSync = 0;
  let lastQueued = 0;
  let lastRules = '';
  const note = (text: string) => events.push({ at: Date.now(), text });
  const every = async (ms: number, fn: () => Promise<void>) => {
    while (running) {
      const began = Date.now();
      try {
        await fn();
      } catch (err) {
        note(`trace: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, Math.max(0, ms - (Date.now() - began))));
    }
  };
  const metrics = async () => {
    const res = await fetch(new URL('/metrics', metricsUrl), { signal: AbortSignal.timeout(1000) });
    const m = parseSyncMetrics(await res.text());
    const sync = m.lastSyncMs.IPv4 ?? 0;
    const queued = m.lastQueuedMs.IPv4 ?? 0;
    if (queued !== lastQueued && lastQueued !== 0) events.push({ at: Math.round(queued), text: `kube-proxy: change queued (pending ${m.pending}, read ${Math.round(Date.now() - queued)} ms later)` });
    if (sync !== lastSync && lastSync !== 0) events.push({ at: Math.round(sync), text: `kube-proxy: sync done (read ${Math.round(Date.now() - sync)} ms later)` });
    lastSync = sync;
    lastQueued = queued;
  };
  const rules = async () => {
    const { stdout } = await exec('iptables-save', ['-t', 'nat'], { maxBuffer: 64 << 20 });
    const r = serviceRules(stdout, s);
    const text = `rules of ${s.namespace}/${s.name}: ${r.clusterIpRule ? '' : 'NO ClusterIP rule; '}${r.nodePortRule ? '' : 'NO NodePort rule; '}endpoints [${r.endpoints.join(' ')}]`;
    if (text !== lastRules) note(text);
    lastRules = text;
  };
  const conntrack = async () => {
    for (const [k, v] of refusedEntries(await fs.readFile('/proc/net/nf_conntrack', 'utf8'), s)) refused.set(k, v);
  };
  const loops = [every(METRICS_EVERY_MS, metrics), every(RULES_EVERY_MS, rules), every(CONNTRACK_EVERY_MS, conntrack)];
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      await conntrack().catch((err: Error) => note(`trace: ${err.message}`));
      return { events, refused: [...refused.values()] };
    },
  };
}

/** Failed requests of a client as events, runs of the same error within 100 ms of each other folded into one. */
export function failureEvents(client: string, log: RequestRecord[]): TraceEvent[] {
  const out: TraceEvent[] = [];
  let run: { first: RequestRecord; last: RequestRecord; n: number; between: number } | undefined;
  const flush = () => {
    if (!run) return;
    const { first, last, n, between } = run;
    const who = first.server ? ` (Server: ${first.server})` : '';
    out.push({ at: first.at, text: `${client}: ${n} × ${first.error}${who}${n > 1 ? `, sent until +${last.at - first.at} ms, ${between} answered in between` : ''}` });
    run = undefined;
  };
  let answered = 0;
  for (const r of log) {
    if (!r.error) {
      answered++;
      continue;
    }
    if (run && r.error === run.first.error && r.at - run.last.at <= 100) {
      run.between += answered;
      run.last = r;
      run.n++;
    } else {
      flush();
      run = { first: r, last: r, n: 1, between: 0 };
    }
    answered = 0;
  }
  flush();
  return out;
}

/** For each pod, when a client's last answer from it came before `from`, and its first answer after. */
export function answerEvents(client: string, log: RequestRecord[], pods: { pod: string; from: number }[]): TraceEvent[] {
  const out: TraceEvent[] = [];
  for (const { pod, from } of pods) {
    const mine = log.filter((r) => r.pod === pod);
    const before = mine.filter((r) => r.at < from).at(-1);
    const after = mine.find((r) => r.at >= from);
    if (before) out.push({ at: before.at, text: `${client}: last request answered by ${pod} before its restart` });
    if (after) out.push({ at: after.at, text: `${client}: first request answered by ${pod} after` });
  }
  return out;
}

/** One line per event, in time order, as ms from the first. */
export function timeline(events: TraceEvent[]): string {
  const sorted = [...events].sort((a, b) => a.at - b.at);
  const t0 = sorted[0]?.at ?? 0;
  return sorted.map((e) => `        +${String(e.at - t0).padStart(5)} ms  ${e.text}`).join('\n');
}

/** Every client's failures and answers around the restarted pods, merged with the operations' steps and the data plane. */
export function explainRound(tallies: Record<string, Tally>, steps: TraceEvent[], restarted: { pod: string; from: number }[], plane: DataPlaneRecord): string {
  const events = [...steps, ...plane.events];
  for (const [client, t] of Object.entries(tallies)) {
    events.push(...failureEvents(client, t.log), ...answerEvents(client, t.log, restarted));
  }
  return `${timeline(events)}\n        conntrack (refused connections, state CLOSE): ${describeRefused(plane.refused, tallies)}`;
}

/**
 * Refused connections by client and by who refused, each with its client port and whether that port had been
 * used earlier in the round by a connection that was answered (and by whom): a new connection on a port whose
 * old conntrack entry still lives may be sent where the old one went.
 */
export function describeRefused(refused: RefusedEntry[], tallies: Record<string, Tally>): string {
  if (refused.length === 0) return 'none';
  const groups = new Map<string, RefusedEntry[]>();
  for (const r of refused) groups.set(`${r.client} refused by ${r.from}`, [...(groups.get(`${r.client} refused by ${r.from}`) ?? []), r]);
  return [...groups]
    .map(([k, rs]) => {
      const ports = rs.map((r) => {
        const earlier = tallies[r.client]?.log.filter((q) => q.localPort === r.port).map((q) => q.pod ?? '?') ?? [];
        return earlier.length > 0 ? `${r.port} (used before: ${earlier.join(',')})` : `${r.port}`;
      });
      return `${k}: ${rs.length}, ports ${ports.join(' ')}`;
    })
    .join('; ');
}
