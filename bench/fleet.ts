// `npm run bench:fleet`: a fleet far larger than this machine, warmed in one process. Many FleetAgents (the
// real coordination code: slot Leases, seeds, NodePrewarm records, the summary) run against the sandbox
// cluster's real API server; only the runtime is simulated: a pull of known size over a registry whose
// bandwidth all concurrent pulls share (each node's own link capped too). Reports, per configuration, the time
// to warm every node, the peak registry concurrency, API requests per node and the API server's CPU seconds.
//
// The baseline, Kruise's model, runs in the same harness against the same API server: one controller hands
// the image to `parallelism` nodes at a time by writing each node's NodeImage-like record (one object per
// node), each node's daemon learns of it through its watch, pulls, and writes its status at start and end; the
// controller hears the end through its watch and hands the image to the next node. No seeds.
//
// Both models are measured alike. Before the clock: every node has its record (as Kruise creates a NodeImage
// with each node), and every component holds its standing watches (our agents' of the ImagePrewarms; the
// controller's of the jobs). The clock and the API server's CPU start when the job object (an ImagePrewarm) is
// created, which both learn of through their watch, and stop when the last node's Succeeded write returns.
// Requests counted: every request a component sends in that window (the create included), one per call
// (a new list-and-watch counts 2); standing watches are counted in neither. Kruise's components write from
// their informer caches (no read before a write); ours read what their code reads.
//
// Usage: node dist/bench/fleet.js [--nodes 1000] [--mb 20] [--registry-mbps 1000] [--node-mbps 100]
//        [--configs 50/0,100/0,100/10,250/10] [--kruise-parallel 100]
// Needs the test cluster (scripts/kube-sandbox up; its admin kubeconfig is found as the tests find it) and the
// fleet CRDs, which it applies.
import * as childProcess from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { FleetAgent, FLEET_DEFAULTS } from '../src/controllers/image-prewarm/fleet-agent.js';
import { KubeFleetApi, turnKey, type FleetApi, type PrewarmFollower, type SlotLease } from '../src/controllers/image-prewarm/fleet-api.js';
import type { FleetPuller, FleetPullOutcome } from '../src/controllers/image-prewarm/fleet-puller.js';
import type { ImagePrewarm, NodePrewarm } from '../src/controllers/image-prewarm/types.js';
import { systemClock } from '../src/clock.js';
import { stableOrder } from '../src/controllers/image-prewarm/node-order.js';
import { withFakeNodes } from './fake-nodes.js';
import { createLogger } from '../src/log.js';
import { applyCrds, ensureNamespace, testKubeConfig } from '../test/support/kube-apply.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}

const N = Number(arg('nodes', '1000'));
const SIZE = Number(arg('mb', '20')) * 1e6;
const REGISTRY_BPS = Number(arg('registry-mbps', '1000')) * 1e6;
const NODE_BPS = Number(arg('node-mbps', '100')) * 1e6;
const CONFIGS = arg('configs', '20/1,50/1,100/5').split(',').map((c) => c.split('/').map(Number) as [number, number]);
const KRUISE_PARALLEL = Number(arg('kruise-parallel', '100'));
const NS = 'inplace-fleet-bench';
const LABEL = 'inplace-agent.bench/fleet';
const G = { group: 'inplace-agent.io', version: 'v1alpha1' };

/** A registry of fixed bandwidth shared by every pull under way; each node's link caps its own share. */
class SimRegistry {
  private readonly active = new Set<{ left: number; done: () => void; onProgress: (d: number) => void }>();
  peak = 0;
  private timer: NodeJS.Timeout | undefined;

  pull(onProgress: (done: number) => void): Promise<void> {
    return new Promise((done) => {
      this.active.add({ left: SIZE, done, onProgress });
      this.peak = Math.max(this.peak, this.active.size);
      this.timer ??= setInterval(() => this.tick(), 50);
    });
  }

  private tick(): void {
    const rate = Math.min(NODE_BPS, REGISTRY_BPS / Math.max(1, this.active.size));
    for (const p of this.active) {
      p.left -= rate * 0.05;
      p.onProgress(Math.min(SIZE, SIZE - p.left));
      if (p.left <= 0) {
        this.active.delete(p);
        p.done();
      }
    }
    if (this.active.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/** A node's simulated runtime: the image is present once pulled. */
class SimPuller implements FleetPuller {
  private have = false;
  constructor(private readonly reg: SimRegistry) {}
  present(): Promise<boolean> {
    return Promise.resolve(this.have);
  }
  async pull(_image: string, _o: unknown, onProgress: (d: number, t: number) => void): Promise<FleetPullOutcome> {
    await this.reg.pull((d) => onProgress(d, SIZE));
    this.have = true;
    return { ok: true, digest: 'sim@sha256:' + '0'.repeat(64), pinned: false, message: '', kind: '' };
  }
}

/**
 * The simulation's one process holds a thousand agents; a thousand real watches of the same objects, or a
 * thousand lists of a thousand Nodes, would make this process, not the API server, the bottleneck. Every real
 * agent holds its own list-and-watch of the ImagePrewarms (and, while it waits near the front, of one
 * prewarm's slot Leases), and lists the targeted nodes once per generation (then every 5 min), so here each
 * agent's call is counted as the one request it is, and served from one shared watch per kind (a copy of the
 * objects per agent) or one shared node list. The API server therefore sees one watch and one node list where
 * a real fleet has one per agent: the fan-out of watch events and the N lists of N node names are the costs
 * the CPU figures leave out.
 */
class SharedWatches {
  private readonly feeds = new Map<string, { follower: PrewarmFollower; subs: Set<{ onList: (items: unknown[]) => void; onError: (e: unknown) => void }>; last?: unknown[] }>();

  /** Node lists by selector: every agent lists the targeted nodes once per generation; here, one list serves all. */
  private readonly nodeLists = new Map<string, Promise<string[]>>();

  constructor(private readonly base: FleetApi) {}

  /** Resolves once the feed `key` has delivered its first list to every subscriber. */
  async listed(key: string): Promise<void> {
    while (!this.feeds.get(key)?.last) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setImmediate(r));
  }

  /** base, with followPrewarms, followSlots and nodesMatching served from shared watches and one list. */
  api(): FleetApi {
    return new Proxy(this.base, {
      get: (target, prop, recv) => {
        if (prop === 'followPrewarms')
          return (onList: (items: ImagePrewarm[]) => void, onError: (e: unknown) => void) =>
            // Only the bench's own prewarms: others on the shared cluster are someone else's test.
            this.subscribe('prewarms', (on, err) => target.followPrewarms((i) => on(i.filter((p) => p.metadata.name.startsWith('bench-'))), err), (items) => onList(structuredClone(items) as ImagePrewarm[]), onError);
        if (prop === 'followSlots')
          return (ns: string, prewarm: string, onList: (items: never[]) => void, onError: (e: unknown) => void) =>
            this.subscribe(`slots/${ns}/${prewarm}`, (on, err) => target.followSlots(ns, prewarm, (i) => on(i), err), (items) => onList(items as never[]), onError);
        if (prop === 'followTurns')
          return (ns: string, node: string, onList: (items: SlotLease[]) => void, onError: (e: unknown) => void) => this.turn(target, ns, node, onList, onError);
        if (prop === 'nodesMatching')
          return (selector: Record<string, string>) => {
            const key = JSON.stringify(selector);
            let p = this.nodeLists.get(key);
            if (!p) {
              p = target.nodesMatching(selector);
              this.nodeLists.set(key, p);
            }
            return p.then((names) => [...names]);
          };
        return Reflect.get(target, prop, recv) as unknown;
      },
    });
  }

  /** One watch of every slot Lease with a turn label, each change passed to the node(s) it names (and named before). */
  private turns?: { follower: PrewarmFollower; subs: Map<string, { onList: (items: SlotLease[]) => void; onError: (e: unknown) => void; last?: string }>; byKey: Map<string, SlotLease[]> };

  private turn(target: FleetApi, ns: string, node: string, onList: (items: SlotLease[]) => void, onError: (e: unknown) => void): PrewarmFollower {
    const deliver = (key: string) => {
      const t = this.turns;
      const sub = t?.subs.get(key);
      if (!t || !sub) return;
      const mine = t.byKey.get(key) ?? [];
      const sig = mine.map((l) => l.resourceVersion).join(',');
      if (sig === sub.last) return;
      sub.last = sig;
      sub.onList(mine);
    };
    if (!this.turns) {
      const t: NonNullable<SharedWatches['turns']> = { follower: undefined as unknown as PrewarmFollower, subs: new Map(), byKey: new Map() };
      this.turns = t;
      t.follower = target.followTurns(ns, undefined, (leases) => {
        const before = [...t.byKey.keys()];
        t.byKey = new Map();
        for (const l of leases) {
          const key = turnKey(l.holder);
          t.byKey.set(key, [...(t.byKey.get(key) ?? []), l]);
        }
        const first = !this.turnsListed;
        this.turnsListed = true;
        for (const key of first ? t.subs.keys() : new Set([...before, ...t.byKey.keys()])) deliver(key);
      }, (e) => {
        for (const s of t.subs.values()) s.onError(e);
      });
    }
    const t = this.turns;
    const key = turnKey(node);
    t.subs.set(key, { onList, onError });
    if (this.turnsListed) setImmediate(() => deliver(key));
    return { stop: async () => void t.subs.delete(key) };
  }

  private turnsListed = false;

  private subscribe(key: string, start: (on: (items: unknown[]) => void, err: (e: unknown) => void) => PrewarmFollower, onList: (items: unknown[]) => void, onError: (e: unknown) => void): PrewarmFollower {
    let feed = this.feeds.get(key);
    if (!feed) {
      const f: { follower?: PrewarmFollower; subs: Set<{ onList: (items: unknown[]) => void; onError: (e: unknown) => void }>; last?: unknown[] } = { subs: new Set() };
      f.follower = start(
        (items) => {
          f.last = items;
          for (const s of [...f.subs]) s.onList(items);
        },
        (e) => {
          f.last = undefined;
          for (const s of [...f.subs]) s.onError(e);
        },
      );
      feed = f as typeof f & { follower: PrewarmFollower };
      this.feeds.set(key, feed);
    }
    const sub = { onList, onError };
    feed.subs.add(sub);
    const last = feed.last;
    if (last) setImmediate(() => feed.subs.has(sub) && onList(last));
    const self = feed;
    return {
      stop: async () => {
        self.subs.delete(sub);
        if (self.subs.size > 0 || this.feeds.get(key) !== self) return;
        this.feeds.delete(key);
        await self.follower.stop();
      },
    };
  }

  async stopAll(): Promise<void> {
    const all = [...this.feeds.values()];
    this.feeds.clear();
    await this.turns?.follower.stop().catch(() => undefined);
    this.turns = undefined;
    this.turnsListed = false;
    await Promise.all(all.map((f) => f.follower.stop().catch(() => undefined)));
  }
}

/** Counts every request a FleetApi makes. */
function counted(api: FleetApi, count: { n: number; by: Map<string, number> }, node = ''): FleetApi {
  const t0 = Date.now();
  return new Proxy(api, {
    get(target, prop, recv) {
      const v = Reflect.get(target, prop, recv) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        // A follow is a list and then a watch: two requests.
        const n = String(prop).startsWith('follow') ? 2 : 1;
        count.n += n;
        count.by.set(String(prop), (count.by.get(String(prop)) ?? 0) + n);
        if (process.env.BENCH_TRACE === String(prop)) console.error(new Error(String(prop)).stack);
        if (process.env.BENCH_TRACE === node) {
          const t = Date.now();
          const r = (v as (...a: unknown[]) => unknown).apply(target, args);
          void Promise.resolve(r).then(
            () => console.error(`${node} ${String(prop)} ${t - t0}..${Date.now() - t0} ms`),
            (e: unknown) => console.error(`${node} ${String(prop)} ${t - t0}..${Date.now() - t0} ms failed ${String(e).slice(0, 80)}`),
          );
          return r;
        }
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

function apiserverCpuSeconds(): number {
  const pid = childProcess.execSync('pgrep -o -f "^[^ ]*kube-apiserver "', { encoding: 'utf8' }).trim();
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks of 1/100 s
}

/**
 * Gives every node a fresh record (no status) before a run, as Kruise creates a NodeImage with each node: the
 * records' creation is setup in both models. Returns them as created (Kruise's informer cache starts from these).
 */
async function freshRecords(custom: k8s.CustomObjectsApi, nodes: string[]): Promise<Map<string, NodePrewarm>> {
  const out = new Map<string, NodePrewarm>();
  for (let i = 0; i < nodes.length; i += 50) {
    await Promise.all(
      nodes.slice(i, i + 50).map(async (n) => {
        const body = { apiVersion: 'inplace-agent.io/v1alpha1', kind: 'NodePrewarm', metadata: { name: n }, spec: { nodeName: n } };
        // One left by an earlier run (BENCH_KEEP) is replaced, so that every run starts from no status.
        await custom.deleteClusterCustomObject({ ...G, plural: 'nodeprewarms', name: n }).catch(() => undefined);
        out.set(n, (await custom.createClusterCustomObject({ ...G, plural: 'nodeprewarms', body })) as NodePrewarm);
      }),
    );
  }
  return out;
}

/** The job object both models start from: an ImagePrewarm of the bench's image over the simulated nodes. */
function prewarmBody(name: string, parallel: number, seeds: number): object {
  return { apiVersion: 'inplace-agent.io/v1alpha1', kind: 'ImagePrewarm', metadata: { name }, spec: { images: ['sim/app:1'], nodeSelector: { [LABEL]: 'yes' }, maxParallelNodes: parallel, seedNodes: seeds } };
}

/** Deletes the bench's prewarms, its nodes' records and its Leases: only its own (the cluster is shared). */
async function cleanup(custom: k8s.CustomObjectsApi, coord: k8s.CoordinationV1Api, nodes: string[]): Promise<void> {
  const list = (await custom.listClusterCustomObject({ ...G, plural: 'imageprewarms' })) as { items: { metadata: { name: string } }[] };
  for (const p of list.items.filter((x) => x.metadata.name.startsWith('bench-'))) await custom.deleteClusterCustomObject({ ...G, plural: 'imageprewarms', name: p.metadata.name });
  for (let i = 0; i < nodes.length; i += 50) await Promise.all(nodes.slice(i, i + 50).map((name) => custom.deleteClusterCustomObject({ ...G, plural: 'nodeprewarms', name }).catch(() => undefined)));
  await coord.deleteCollectionNamespacedLease({ namespace: NS }).catch(() => undefined);
}

interface Row {
  model: string;
  parallel: number;
  seeds: number;
  seconds: number;
  peak: number;
  reqPerNode: number;
  cpu: number;
}

async function runOurs(kc: k8s.KubeConfig, nodes: string[], parallel: number, seeds: number): Promise<Row> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const reg = new SimRegistry();
  const log = createLogger('error');
  const count = { n: 0, by: new Map<string, number>() };
  const shared = new SharedWatches(new KubeFleetApi(kc, systemClock));
  const name = `bench-${parallel}-${seeds}-${Date.now() % 100000}`;
  await freshRecords(custom, nodes);
  // Done when the last node's own record write saying Succeeded returns: seen as the agents write them, so
  // that the harness adds no requests of its own to the API server's load.
  const warm = new Set<string>();
  let allWarm!: () => void;
  const finished = new Promise<void>((r) => (allWarm = r));
  let tEnd = 0;
  const sharedApi = shared.api();
  const api = new Proxy(sharedApi, {
    get(target, prop, recv) {
      if (prop !== 'writeNodePrewarmStatus') return Reflect.get(target, prop, recv) as unknown;
      return async (obj: NodePrewarm) => {
        const r = await target.writeNodePrewarmStatus(obj);
        if (r.status?.prewarms?.[name]?.phase === 'Succeeded' && !warm.has(r.metadata.name)) {
          warm.add(r.metadata.name);
          if (warm.size === N) {
            tEnd = Date.now();
            allWarm();
          }
        }
        return r;
      };
    },
  });
  const agents = nodes.map((node) => new FleetAgent(counted(api, count, process.env.BENCH_TRACE === 'seed' && node === stableOrder(name, nodes)[0] ? 'seed' : node), new SimPuller(reg), { ...FLEET_DEFAULTS, node, leaseNamespace: NS }, systemClock, log));
  // The agents run, and hold their watch of the ImagePrewarms, before the clock starts.
  for (const a of agents) a.start();
  await shared.listed('prewarms');
  await Promise.all(agents.map((a) => a.ready()));
  count.n = 0;
  count.by.clear();
  const cpu0 = apiserverCpuSeconds();
  const t0 = Date.now();
  count.n++; // the create, as in Kruise's model
  await custom.createClusterCustomObject({ ...G, plural: 'imageprewarms', body: prewarmBody(name, parallel, seeds) });
  const progress = setInterval(() => {
    const by = [...count.by].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([k, v]) => `${k} ${v}`);
    process.stderr.write(`  ours p=${parallel} s=${seeds}: ${warm.size}/${N} warm, ${((Date.now() - t0) / 1000).toFixed(0)} s, ${count.n} requests (${by.join(', ')})\n`);
  }, 5000);
  await finished;
  clearInterval(progress);
  const cpu = apiserverCpuSeconds() - cpu0;
  const seconds = (tEnd - t0) / 1000;
  const requests = count.n;
  const by = [...count.by].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${(v / N).toFixed(2)}`);
  process.stderr.write(`\n  requests per node: ${by.join(', ')}, create ${(1 / N).toFixed(3)}\n`);
  await Promise.all(agents.map((a) => a.stop()));
  await shared.stopAll();
  process.stderr.write('\n');
  if (!process.env.BENCH_KEEP) await cleanup(custom, kc.makeApiClient(k8s.CoordinationV1Api), nodes);
  return { model: 'inplace-agent (no controller)', parallel, seeds, seconds, peak: reg.peak, reqPerNode: requests / N, cpu };
}

/** Kruise's model, from its documented behaviour: a controller fills `parallel` nodes' records at a time. */
async function runKruise(kc: k8s.KubeConfig, nodes: string[], parallel: number): Promise<Row> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const reg = new SimRegistry();
  let requests = 0;
  const job = `bench-kruise-${Date.now() % 100000}`;
  // One NodeImage per node exists before any job (kruise creates them with the nodes): setup, as in ours. The
  // controller's and the daemons' informers hold them, so a write sends the cached object, with no read first.
  const cache = await freshRecords(custom, nodes);
  const write = async (node: string, phase: string) => {
    requests++;
    const cur = cache.get(node)!;
    const entry = { generation: 1, phase, firstSeen: new Date().toISOString(), images: [{ image: 'sim/app:1', phase, bytesDone: 0, bytesTotal: SIZE, attempts: 1 }] };
    cache.set(node, (await custom.replaceClusterCustomObjectStatus({ ...G, plural: 'nodeprewarms', name: node, body: { ...cur, status: { prewarms: { [job]: entry } } } })) as NodePrewarm);
  };
  // The controller's standing watch of the jobs, held before the clock (as our agents hold theirs).
  let jobSeen!: () => void;
  const seen = new Promise<void>((r) => (jobSeen = r));
  let listed!: () => void;
  const firstList = new Promise<void>((r) => (listed = r));
  const follower = new KubeFleetApi(kc, systemClock).followPrewarms(
    (items) => {
      listed();
      if (items.some((p) => p.metadata.name === job)) jobSeen();
    },
    () => undefined,
  );
  await firstList;
  const cpu0 = apiserverCpuSeconds();
  const t0 = Date.now();
  requests++; // the create, as in ours
  await custom.createClusterCustomObject({ ...G, plural: 'imageprewarms', body: prewarmBody(job, parallel, 0) });
  await seen;
  const queue = [...nodes];
  let running = 0;
  let done = 0;
  let tEnd = 0;
  await new Promise<void>((resolve) => {
    // The controller: lists the nodes once, then keeps `parallel` nodes pulling; every hand-out is a write of
    // the node's record (spec: the image), every start and end a status write by the node's daemon.
    requests++; // the controller's node list
    const handOut = () => {
      while (running < parallel && queue.length > 0) {
        const node = queue.shift()!;
        running++;
        void (async () => {
          await write(node, 'Waiting'); // controller: the record names the image
          await write(node, 'Pulling'); // daemon (heard it through its standing watch): status Pulling
          await reg.pull(() => undefined);
          await write(node, 'Succeeded'); // daemon: status Succeeded
          running--;
          done++;
          if (done % 50 === 0) requests++; // the controller's job status update, batched
          if (done % 50 === 0) process.stderr.write(`\r  kruise p=${parallel}: ${done}/${N} warm, ${((Date.now() - t0) / 1000).toFixed(0)} s   `);
          if (done === N) {
            tEnd = Date.now();
            resolve();
          } else handOut();
        })();
      }
    };
    handOut();
  });
  const cpu = apiserverCpuSeconds() - cpu0;
  const seconds = (tEnd - t0) / 1000;
  await follower.stop();
  process.stderr.write('\n');
  await cleanup(custom, kc.makeApiClient(k8s.CoordinationV1Api), nodes);
  return { model: "Kruise's model (one controller, one NodeImage per node)", parallel, seeds: 0, seconds, peak: reg.peak, reqPerNode: requests / N, cpu };
}

/**
 * @kubernetes/client-node 1.x makes a new https.Agent, so a new TLS connection, for every request. A real
 * agent pays one handshake per request on its own node; a thousand agents in this one process would spend
 * more CPU on handshakes than on anything measured. Here every request of both models goes over a few kept
 * connections instead, which also spares the API server the handshakes (in both models alike).
 */
function keepAlive(kc: k8s.KubeConfig): k8s.KubeConfig {
  // createAgent is private in the typings; it is what both the API clients and Watch call.
  const inner = kc as unknown as { createAgent(cluster: unknown, options: object): unknown };
  const make = inner.createAgent.bind(kc);
  let agent: unknown;
  inner.createAgent = (cluster, options) => (agent ??= make(cluster, { ...options, keepAlive: true, maxSockets: 32 }));
  return kc;
}

async function main(): Promise<void> {
  const found = testKubeConfig();
  if (!found) throw new Error('no test cluster: start it with scripts/kube-sandbox up');
  const kc = keepAlive(found);
  await applyCrds(kc, ['imageprewarm.yaml', 'nodeprewarm.yaml']);
  await ensureNamespace(kc, NS);
  // A changed CRD re-initializes its storage for a moment (429 "storage is (re)initializing").
  for (let i = 0; ; i++) {
    try {
      await kc.makeApiClient(k8s.CustomObjectsApi).listClusterCustomObject({ ...G, plural: 'imageprewarms' });
      await kc.makeApiClient(k8s.CustomObjectsApi).listClusterCustomObject({ ...G, plural: 'nodeprewarms' });
      break;
    } catch (err) {
      if (i >= 30) throw err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  const nodes = Array.from({ length: N }, (_, i) => `sim-${String(i).padStart(5, '0')}`);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const coord = kc.makeApiClient(k8s.CoordinationV1Api);
  // Deleted however the bench ends; refused while a DaemonSet would put a Pending pod on each (fake-nodes.ts).
  const rows = await withFakeNodes(kc, nodes, { [LABEL]: 'yes' }, async () => {
    try {
      await cleanup(custom, coord, nodes);
      const out: Row[] = [];
      for (const [p, s] of CONFIGS) out.push(await runOurs(kc, nodes, p, s));
      if (KRUISE_PARALLEL > 0) out.push(await runKruise(kc, nodes, KRUISE_PARALLEL));
      return out;
    } finally {
      if (!process.env.BENCH_KEEP) await cleanup(custom, coord, nodes);
    }
  });
  const floor = (N * SIZE) / REGISTRY_BPS;
  console.log(`\n${N} nodes, ${SIZE / 1e6} MB image, registry ${REGISTRY_BPS / 1e6} MB/s shared, node links ${NODE_BPS / 1e6} MB/s (bandwidth floor ${floor.toFixed(0)} s)\n`);
  console.log('| model | maxParallelNodes | seedNodes | time to warm all | peak registry concurrency | API requests per node | apiserver CPU s |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.model} | ${r.parallel} | ${r.seeds} | ${r.seconds.toFixed(1)} s | ${r.peak} | ${r.reqPerNode.toFixed(1)} | ${r.cpu.toFixed(1)} |`);
}

await main();
process.exit(0);
