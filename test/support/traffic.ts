// Clients that send HTTP requests to a Service for as long as a restart runs and count what failed: one opens
// a new connection for every request (as a client behind a load balancer), one keeps connections alive and
// reuses them (Node's http Agent with keepAlive). Both are bounded in time and count and stop by themselves.
// Targets are the test cluster's own addresses (a ClusterIP, a NodePort on the node's address) or loopback.
import http from 'node:http';

/** What a client saw. */
export interface Tally {
  ok: number;
  failed: number;
  /** Failures by error code (ECONNREFUSED, ECONNRESET, timeout, HTTP 503...). */
  errors: Record<string, number>;
  /** Longest time between two successful responses, ms. */
  longestGapMs: number;
  /** Every request in the order sent: when (epoch ms), and who answered (the server's pod name) or why it failed. */
  log: RequestRecord[];
}

/** One request of a client. */
export interface RequestRecord {
  /** Epoch ms at which the request was sent. */
  at: number;
  /** Epoch ms at which it succeeded or failed. */
  end: number;
  /** The pod that answered (the test server says its name), when it did. */
  pod?: string;
  /** The client's local port, when its connection was made. */
  localPort?: number;
  /** Why it failed (as Tally.errors), when it did. */
  error?: string;
  /** The Server header of an answer other than 200 (who answered it). */
  server?: string;
}

/** A running client. */
export interface TrafficClient {
  /** Stops sending, waits for the requests in flight, and returns the tally. */
  stop(): Promise<Tally>;
}

/** Where and how often to send. */
export interface TrafficTarget {
  host: string;
  port: number;
  /** Time between two requests (of one lane), ms (default 10). */
  everyMs?: number;
  /** The client stops by itself after this long (default 120 s) or this many requests (default 20,000). */
  maxMs?: number;
  maxRequests?: number;
  /** A request with no answer after this long counts as failed (default 2 s). */
  timeoutMs?: number;
}

class Counter {
  ok = 0;
  failed = 0;
  errors: Record<string, number> = {};
  private last = 0;
  private longest = 0;
  private readonly log: RequestRecord[] = [];
  sent = 0;

  success(at: number, pod: string | undefined, localPort: number | undefined): void {
    const now = performance.now();
    if (this.last > 0) this.longest = Math.max(this.longest, now - this.last);
    this.last = now;
    this.ok++;
    this.log.push({ at, end: Date.now(), ...(pod ? { pod } : {}), ...(localPort ? { localPort } : {}) });
  }

  failure(at: number, code: string, server?: string, localPort?: number): void {
    this.failed++;
    this.errors[code] = (this.errors[code] ?? 0) + 1;
    this.log.push({ at, end: Date.now(), error: code, ...(server ? { server } : {}), ...(localPort ? { localPort } : {}) });
  }

  tally(): Tally {
    return { ok: this.ok, failed: this.failed, errors: { ...this.errors }, longestGapMs: Math.round(this.longest), log: [...this.log] };
  }
}

/** One GET; resolves when it succeeded or failed (never rejects). */
function get(t: TrafficTarget, agent: http.Agent | false, c: Counter): Promise<void> {
  const at = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    let body = '';
    let localPort: number | undefined;
    const done = (code?: string, server?: string) => {
      if (settled) return;
      settled = true;
      // The test server answers "ok POD-NAME".
      if (code === undefined) c.success(at, /^ok (\S+)/.exec(body)?.[1], localPort);
      else c.failure(at, code, server, localPort);
      resolve();
    };
    const req = http.get({ host: t.host, port: t.port, path: '/', agent, timeout: t.timeoutMs ?? 2000 }, (res) => {
      localPort = res.socket?.localPort;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < 200) body += chunk;
      });
      res.once('end', () => (res.statusCode === 200 ? done() : done(`HTTP ${res.statusCode}`, String(res.headers.server ?? '(no Server header)'))));
      res.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? 'response error'));
    });
    req.once('timeout', () => {
      // Which connection it was, and whether its handshake had completed: a SYN never answered, or a request never answered.
      localPort ??= req.socket?.localPort;
      const code = req.socket && !req.socket.connecting ? 'timeout' : 'connect timeout';
      req.destroy();
      done(code);
    });
    req.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}

/** A new connection for every request, one request every everyMs whatever the answers take. */
export function newConnectionClient(t: TrafficTarget): TrafficClient {
  const c = new Counter();
  const inflight = new Set<Promise<void>>();
  const began = Date.now();
  const timer = setInterval(() => {
    if (c.sent >= (t.maxRequests ?? 20_000) || Date.now() - began > (t.maxMs ?? 120_000)) return clearInterval(timer);
    c.sent++;
    const p = get(t, false, c).then(() => void inflight.delete(p));
    inflight.add(p);
  }, t.everyMs ?? 10);
  return {
    stop: async () => {
      clearInterval(timer);
      await Promise.all([...inflight]);
      return c.tally();
    },
  };
}

/** `lanes` connections kept alive and reused, each sending its next request everyMs after the last answer. */
export function keepAliveClient(t: TrafficTarget, lanes = 2): TrafficClient {
  const c = new Counter();
  let running = true;
  const began = Date.now();
  const agents: http.Agent[] = [];
  const lane = async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    while (running && c.sent < (t.maxRequests ?? 20_000) && Date.now() - began <= (t.maxMs ?? 120_000)) {
      c.sent++;
      await get(t, agent, c);
      await new Promise((r) => setTimeout(r, t.everyMs ?? 10));
    }
  };
  const all = Promise.all(Array.from({ length: lanes }, lane));
  return {
    stop: async () => {
      running = false;
      await all;
      for (const a of agents) a.destroy();
      return c.tally();
    },
  };
}

/** Runs the clients around fn: starts them, waits `marginMs`, runs fn, waits `marginMs`, stops them. */
export async function withTraffic<T>(clients: Record<string, () => TrafficClient>, marginMs: number, fn: () => Promise<T>): Promise<{ result: T; tallies: Record<string, Tally> }> {
  const running = Object.entries(clients).map(([k, make]) => [k, make()] as const);
  const tallies: Record<string, Tally> = {};
  let result: T;
  try {
    await new Promise((r) => setTimeout(r, marginMs));
    result = await fn();
    await new Promise((r) => setTimeout(r, marginMs));
  } finally {
    for (const [k, cl] of running) tallies[k] = await cl.stop();
  }
  return { result, tallies };
}

/**
 * Waits (at most ms) until every client gets every request answered for one second in a row. Call it only once
 * kube-proxy has the Service in its rules (traffic-trace.ts, waitForRules): a connection sent to a ClusterIP
 * without a rule leaves a conntrack entry without translation (SYN_SENT, 120 s, renewed by each SYN on it), and a
 * later connection that reuses its client port follows it into nothing: a "connect timeout" minutes later.
 */
export async function waitServing(clients: Record<string, () => TrafficClient>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const running = Object.values(clients).map((make) => make());
    await new Promise((r) => setTimeout(r, 1000));
    const tallies = await Promise.all(running.map((c) => c.stop()));
    if (tallies.every((t) => t.failed === 0 && t.ok > 0)) return;
    if (Date.now() > deadline) throw new Error(`the Service does not answer every request after ${ms} ms: ${JSON.stringify(tallies)}`);
  }
}

/** Sum of failed requests over tallies. */
export function failedOf(tallies: Record<string, Tally>): number {
  return Object.values(tallies).reduce((n, t) => n + t.failed, 0);
}

/** ' (Server: X)' for an error that was an HTTP answer: who answered it. */
function serverOf(t: Tally, error: string): string {
  const servers = [...new Set(t.log.filter((r) => r.error === error && r.server).map((r) => r.server))];
  return servers.length > 0 ? ` (Server: ${servers.join(', ')})` : '';
}

/** One line per client: ok, failed (by code, and who answered an HTTP error), longest gap. */
export function describeTallies(tallies: Record<string, Tally>): string {
  return Object.entries(tallies)
    .map(([k, t]) => `${k}: ${t.ok} ok, ${t.failed} failed${t.failed ? ` (${Object.entries(t.errors).map(([e, n]) => `${e} ${n}${serverOf(t, e)}`).join(', ')})` : ''}, longest gap ${t.longestGapMs} ms`)
    .join('; ');
}

/** A span of time something ran in, epoch ms, by name (a restart, from its request to its success). */
export interface Span {
  name: string;
  from: number;
  to: number;
}

/**
 * Each failed request of tallies in one line: when it was sent and ended, which of spans it fell in (or none), and
 * who answered the client's requests just before and after it: what a failure is read beside.
 */
export function describeFailures(tallies: Record<string, Tally>, spans: Span[], epoch: number): string[] {
  const s = (ms: number) => `${((ms - epoch) / 1000).toFixed(2)}s`;
  const out: string[] = [];
  for (const [client, t] of Object.entries(tallies)) {
    t.log.forEach((r, i) => {
      if (!r.error) return;
      const during = spans.filter((sp) => r.end >= sp.from && r.at <= sp.to).map((sp) => `${sp.name} (${s(sp.from)}-${s(sp.to)})`);
      const before = t.log.slice(0, i).reverse().find((x) => x.pod)?.pod ?? '-';
      const after = t.log.slice(i + 1).find((x) => x.pod)?.pod ?? '-';
      out.push(`${client}: ${r.error}, sent ${s(r.at)}, ended ${s(r.end)}, port ${r.localPort ?? '-'}, during ${during.join(', ') || 'no span'}; answered before by ${before}, after by ${after}`);
    });
  }
  return out;
}
