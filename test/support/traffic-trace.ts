// What the data plane did during one traffic round, so that a round with failed requests explains itself: the
// node's kube-proxy sync metrics (sampled every 50 ms), the Service's rules in the nat table (iptables-save every
// 100 ms: which pod addresses its KUBE-SVC chain sends to, whether its ClusterIP and NodePort rules are there),
// and the conntrack entries of the clients' connections that are not closing normally (a refused connection leaves
// none; an entry that stays decides where a new connection from the same client port goes, whatever the rules say:
// to which pod, or to the host itself). Printed beside the clients' failures and the operations' steps on one clock (epoch ms). Read-only: it never changes a rule or an entry.
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
/** An iptables-save that takes longer is given up (the trace must never hold a round up). */
const IPTABLES_SAVE_TIMEOUT_MS = 5000;
/** How often conntrack is read. */
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
  /**
   * Conntrack entries of the clients' connections in any state but TIME_WAIT that were seen in two reads (2 s
   * apart; a request lasts milliseconds) or in SYN_SENT, SYN_RECV or CLOSE: where a reused client port would go.
   */
  stray: StrayEntry[];
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

/** A conntrack entry of a client's connection that is not closing normally (any state but TIME_WAIT). */
export interface StrayEntry {
  client: 'clusterIp' | 'nodePort';
  state: string;
  /** The client's port (the original tuple's source port). */
  port: number;
  /** Where the entry sends the connection: a pod's address, or the host itself (no rule translated it). */
  to: string;
}

/**
 * Conntrack entries (/proc/net/nf_conntrack text) of connections to the Service's addresses in any state but
 * TIME_WAIT, keyed by client, port, state and destination. A connection refused outright leaves none (its entry
 * goes with the RST); what stays says where a new connection from the same client port would be sent: a SYN on an
 * entry in SYN_SENT (or ESTABLISHED to CLOSE_WAIT) follows that entry's translation, not the rules.
 */
export function strayEntries(conntrack: string, s: TracedService): Map<string, StrayEntry> {
  const out = new Map<string, StrayEntry>();
  for (const line of conntrack.split('\n')) {
    const state = / tcp +6 +\d+ ([A-Z_]+) /.exec(line)?.[1];
    if (!state || state === 'TIME_WAIT') continue;
    const tuples = [...line.matchAll(/src=(\S+) dst=(\S+) sport=(\d+) dport=(\d+)/g)];
    if (tuples.length < 2) continue;
    const [orig, reply] = tuples as [RegExpMatchArray, RegExpMatchArray];
    const client = orig[2] === s.clusterIp && Number(orig[4]) === s.port ? 'clusterIp' : orig[2] === s.nodeIp && Number(orig[4]) === s.nodePort ? 'nodePort' : undefined;
    if (!client) continue;
    const to = reply[1] === orig[2] && reply[3] === orig[4] ? 'the host itself' : `${reply[1]}:${reply[3]}`;
    out.set(`${client} ${orig[3]} ${state} ${to}`, { client, state, port: Number(orig[3]), to });
  }
  return out;
}

/**
 * Waits (at most ms) until the nat table sends the Service's ClusterIP and NodePort to `endpoints` pod addresses.
 * Until kube-proxy has the Service's endpoints, its NodePort rejects connections from this host (filter INPUT,
 * after the connection's conntrack entry was confirmed on the way out), and each such connection leaves an entry
 * without translation in SYN_SENT for 120 s: a later connection from the same client port follows that entry to
 * the host itself and is refused, whatever the rules say by then. So no client is started before this.
 */
export async function waitForRules(s: TracedService, endpoints: number, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const { stdout } = await exec('iptables-save', ['-t', 'nat'], { maxBuffer: 64 << 20, timeout: IPTABLES_SAVE_TIMEOUT_MS });
    const r = serviceRules(stdout, s);
    if (r.clusterIpRule && r.nodePortRule && r.endpoints.length === endpoints) return;
    if (Date.now() > deadline) throw new Error(`kube-proxy's rules for ${s.namespace}/${s.name} after ${ms} ms: ${JSON.stringify(r)}, want ${endpoints} endpoints`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Starts tracing the data plane of a Service (kube-proxy's metrics at metricsUrl, the nat table, conntrack). */
export function traceDataPlane(metricsUrl: string, s: TracedService): DataPlaneTrace {
  const events: TraceEvent[] = [];
  const seen = new Map<string, { entry: StrayEntry; reads: number }>();
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
    const { stdout } = await exec('iptables-save', ['-t', 'nat'], { maxBuffer: 64 << 20, timeout: IPTABLES_SAVE_TIMEOUT_MS });
    const r = serviceRules(stdout, s);
    const text = `rules of ${s.namespace}/${s.name}: ${r.clusterIpRule ? '' : 'NO ClusterIP rule; '}${r.nodePortRule ? '' : 'NO NodePort rule; '}endpoints [${r.endpoints.join(' ')}]`;
    if (text !== lastRules) note(text);
    lastRules = text;
  };
  const conntrack = async () => {
    for (const [k, entry] of strayEntries(await fs.readFile('/proc/net/nf_conntrack', 'utf8'), s)) seen.set(k, { entry, reads: (seen.get(k)?.reads ?? 0) + 1 });
  };
  const loops = [every(METRICS_EVERY_MS, metrics), every(RULES_EVERY_MS, rules), every(CONNTRACK_EVERY_MS, conntrack)];
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      await conntrack().catch((err: Error) => note(`trace: ${err.message}`));
      const stray = [...seen.values()].filter(({ entry, reads }) => reads > 1 || ['SYN_SENT', 'SYN_RECV', 'CLOSE'].includes(entry.state)).map(({ entry }) => entry);
      return { events, stray };
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
  return timeline(events);
}

/**
 * Stray conntrack entries by client, state and destination, each with its client port and whether that port was
 * used in the round by a connection that was answered (and by whom).
 */
export function describeStray(stray: StrayEntry[], tallies: Record<string, Tally>, keptAlive = 'keepAlive'): string {
  // The kept-alive client's own connections live across reads by design.
  const lanes = new Set(tallies[keptAlive]?.log.map((r) => r.localPort) ?? []);
  const shown = stray.filter((e) => !lanes.has(e.port));
  if (shown.length === 0) return 'none';
  const groups = new Map<string, StrayEntry[]>();
  for (const e of shown) {
    const k = `${e.client} ${e.state} to ${e.to}`;
    groups.set(k, [...(groups.get(k) ?? []), e]);
  }
  return [...groups]
    .map(([k, es]) => {
      const ports = es.slice(0, 20).map((e) => {
        const used = tallies[e.client]?.log.filter((q) => q.localPort === e.port).map((q) => q.pod ?? '?') ?? [];
        return used.length > 0 ? `${e.port} (answered by ${used.join(',')})` : `${e.port}`;
      });
      return `${k}: ${es.length}, ports ${ports.join(' ')}${es.length > 20 ? ' ...' : ''}`;
    })
    .join('; ');
}
