// `npm run bench:rollout`: one image change rolled out to the N pods of a workload on the 3-node test cluster,
// from the template change until every pod is updated and ready, in the ways of bench/rollout-rows.ts:
//   (a) in place through the agents, maxUnavailable 1;  (b) the stock StatefulSet RollingUpdate;
//   (b') the same with a preStop sleep of 2 s;           (c) in place, maxUnavailable 3;
//   (d) a Deployment's rolling update (25% surge);       (d') the same with a preStop sleep of 2 s;
//   (e) in place, maxUnavailable 25%;                     (f), (g) a Deployment in place, maxUnavailable 1 and 25%;
//   (t) two StatefulSets of N pods each, in place at once (one coordinator, two rollouts);
//   (r) a Deployment in place, `kubectl rollout restart` (every container of each pod restarted, its image kept):
//       against (f), the same Deployment's image change, it shows what a restart of two containers costs.
// `--n 6,30` adds the scale rows (30 pods: 10 a node); the report prints how time grows with N. `--rows-at
// 30=a,c,e` picks other rows for one N (a partial run); every flag may also come from the environment
// (BENCH_ROLLOUT_N, BENCH_ROLLOUT_ROWS, BENCH_ROLLOUT_ROWS_AT, BENCH_ROLLOUT_SETTINGS, ...).
// The pods run a small HTTP server (the agent's image, which every node holds) and a sidecar. The new version adds
// a 30 MB layer to that image, fresh for every run, so each run pulls it. Two settings: the cluster's loopback
// registry, and the same through a proxy throttled per connection (--rate MiB/s) like a remote registry. Per run:
// the time, the failed requests of two clients through the Service (a new connection every 20 ms, and two
// keep-alive lanes), the pods created (each one a scheduler decision), the new pod IPs, and the API server's
// write requests per pod by resource and verb (apiserver_request_total, before and after), less what the idle
// cluster writes over the same time (measured over --idle-ms just before each run).
//
// Usage: node dist/bench/rollout.js [--n 6,30] [--rows a,b,b',c,d,d',e,f,g,t,r] [--rows-at 30=a,c,e] [--settings local,remote] [--rate 4] [--idle-ms 10000]
// Needs scripts/kube-sandbox up --nodes 3 and scripts/kube-deploy-agent. It installs the optional fleet RBAC of
// deploy/ (for the pre-warm) and removes it again if it was not there. Traffic goes only to the cluster's Service.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions, Watch, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, type InPlaceRollout } from '../src/controllers/rollout/types.js';
import { kubeEnv } from '../test/testbed/kube-env.js';
import { holdFleetRbac } from '../test/support/fleet-rbac-hold.js';
import { buildLayer, seededBytes } from '../test/support/registry-images.js';
import { extendImage } from '../test/support/registry-extend.js';
import { startRegistryProxy, type RegistryProxy } from '../test/support/registry-proxy.js';
import { agentImage, createService, waitReadyEndpoints, type ServiceAddress } from '../test/support/traffic-fixture.js';
import { keepAliveClient, newConnectionClient, waitServing, withTraffic, type Tally } from '../test/support/traffic.js';
import { netOfIdle, perPod, readWrites, stored, writesBetween, type Writes } from './apiserver-writes.js';
import { APP, deployment, ROWS, statefulSet, template, templateChange, workloadNames, type Row } from './rollout-rows.js';
import { RolloutTimeline } from './rollout-timeline.js';
import { StockTimeline } from './stock-timeline.js';
import { failureEvents, waitForRules } from '../test/support/traffic-trace.js';
import { eventLine, eventWrites, readEvents, type EventWrites } from './event-tally.js';

const exec = promisify(execFile);
const env = kubeEnv();
const KUBECTL = path.join(env.binDir, 'kubectl');
const NS = 'inplace-bench-rollout';
const MiB = 1024 * 1024;
const LAYER_MIB = 30;
const RUN_TIMEOUT_MS = 600_000;
const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The flag --name, else the environment's BENCH_ROLLOUT_NAME (dashes as underscores), else def. */
function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && process.argv[i + 1]) return process.argv[i + 1];
  return process.env[`BENCH_ROLLOUT_${name.toUpperCase().replace(/-/g, '_')}`] || def;
}
const SIZES = arg('n', '6,30').split(',').map(Number).filter((n) => n > 0);
const ROW_KEYS = arg('rows', ROWS.map((r) => r.key).join(',')).split(',');
/** Rows for one N instead of --rows: `30=a,c,e;12=a`. */
const ROWS_AT = new Map(
  arg('rows-at', '')
    .split(';')
    .filter((x) => x.includes('='))
    .map((x) => [Number(x.split('=')[0]), x.split('=')[1].split(',')] as const),
);
const SETTINGS = arg('settings', 'local,remote').split(',');
const RATE_MIB = Number(arg('rate', '4'));
/** How long the idle cluster is watched before each run, for the background writes taken off. */
const IDLE_MS = Number(arg('idle-ms', '10000'));

/** What one run measured. */
interface Result {
  row: Row;
  /** The pods updated (N, or 2N for the twin row). */
  pods: number;
  ms: number;
  tallies: Record<string, Tally>;
  podsCreated: number;
  newIps: number;
  /** The API server's writes during the run, less the idle cluster's over the same time. */
  writes: Writes & { background: number };
  /** The namespace's Event writes during the run, by reporter and reason (bench/event-tally.ts). */
  events: EventWrites;
}

const isReady = (p: V1Pod) => !p.metadata?.deletionTimestamp && (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);

async function main(): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(env.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const nodes = (await core.listNode()).items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).map((n) => n.metadata?.name ?? '');
  const rowsAt = (n: number) => ROWS.filter((r) => (ROWS_AT.get(n) ?? ROW_KEYS).includes(r.key));
  const commit = (await exec('git', ['rev-parse', '--short', 'HEAD']).catch(() => ({ stdout: '?' }))).stdout.trim();

  await core.deleteNamespace({ name: NS }).catch(() => undefined);
  while (await core.readNamespace({ name: NS }).then(() => true, () => false)) await sleep(500);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  // The DaemonSet's agents need the optional fleet RBAC; held by reference, so a test that ends meanwhile keeps it.
  const rbac = await holdFleetRbac(kc, 'bench-rollout');
  const svc = await createService(kc, NS, APP, APP);
  const base = await agentImage(kc);
  const sidecar = env.sandbox.images.appV1;
  const proxy: RegistryProxy = await startRegistryProxy(env.sandbox.registry);
  const clients = (s: ServiceAddress) => ({
    newConnection: () => newConnectionClient({ host: s.clusterIp, port: s.port, everyMs: 20, maxMs: RUN_TIMEOUT_MS + 60_000, maxRequests: 1_000_000 }),
    keepAlive: () => keepAliveClient({ host: s.clusterIp, port: s.port, everyMs: 10, maxMs: RUN_TIMEOUT_MS + 60_000, maxRequests: 1_000_000 }, 2),
  });
  console.log(
    `bench:rollout at ${commit}, ${new Date().toISOString()}: ${nodes.length} nodes (${nodes.join(', ')}); pods of an HTTP server (${base}, ` +
      `every node holds it) and a sidecar; v2 adds a ${LAYER_MIB} MiB layer, new for each run; remote-like: ${RATE_MIB} MiB/s per connection through ${proxy.host}`,
  );

  /** Deletes the workloads and their rollouts, and waits until no pod of them is left. */
  const cleanUp = async () => {
    for (const name of workloadNames({ key: '', label: '', kind: 'StatefulSet', twin: true })) {
      await custom.deleteNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: NS, name }).catch(() => undefined);
      await apps.deleteNamespacedStatefulSet({ namespace: NS, name }).catch(() => undefined);
      await apps.deleteNamespacedDeployment({ namespace: NS, name }).catch(() => undefined);
    }
    while ((await core.listNamespacedPod({ namespace: NS, labelSelector: `app=${APP}` })).items.length > 0) await sleep(500);
  };

  const podsNow = async () => (await core.listNamespacedPod({ namespace: NS, labelSelector: `app=${APP}` })).items.filter((p) => !p.metadata?.deletionTimestamp);
  const until = async (what: string, ms: number, probe: () => Promise<boolean>) => {
    const deadline = Date.now() + ms;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await sleep(100);
    }
  };
  const rolloutDone = async (name: string) => {
    const r = (await custom.getNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: NS, name })) as InPlaceRollout;
    return r.status?.observedGeneration === r.metadata.generation && r.status?.phase === 'Succeeded';
  };
  /** Whether workload name (of the row's kind) shows generation gen done: n pods, all updated and ready, released. */
  const workloadDone = async (row: Row, name: string, n: number, gen: number | undefined) => {
    const w = row.kind === 'Deployment' ? await apps.readNamespacedDeployment({ namespace: NS, name }) : await apps.readNamespacedStatefulSet({ namespace: NS, name });
    const st = w.status;
    // The status of the workload's latest generation, at gen or after: a held Deployment's release is a
    // generation of its own (spec.paused false), after the template change's.
    const seen = st?.observedGeneration ?? 0;
    if (seen < (gen ?? 0) || seen !== w.metadata?.generation || st?.updatedReplicas !== n || st?.readyReplicas !== n) return false;
    // A Deployment held for an in-place rollout is done once the hold is released (spec.paused false again).
    if ('paused' in (w.spec ?? {}) && (w.spec as { paused?: boolean }).paused) return false;
    // A Deployment's old pods are gone, a StatefulSet's every pod counts: replicas is n and all of them new.
    return (st.replicas ?? 0) === n;
  };

  async function runOnce(row: Row, n: number, v1: string, v2: string): Promise<Result> {
    await cleanUp();
    const names = workloadNames(row);
    const total = n * names.length;
    for (const name of names) {
      const tpl = template(row, name, v1, sidecar, nodes);
      if (row.kind === 'Deployment') await apps.createNamespacedDeployment({ namespace: NS, body: deployment(name, n, tpl) });
      else await apps.createNamespacedStatefulSet({ namespace: NS, body: statefulSet(row, name, n, tpl) });
    }
    await until(`${total} pods Ready`, 300_000, async () => (await podsNow()).filter(isReady).length === total);
    if (row.inPlace) {
      for (const name of names) {
        await custom.createNamespacedCustomObject({
          group: IPR_GROUP,
          version: IPR_VERSION,
          plural: IPR_PLURAL,
          namespace: NS,
          // A Deployment's rollout without the pre-warm, as test/integration/rollout-deployment.test.ts runs it: its
          // ImagePrewarm is refused by the API server here (an empty spec.podSelector.matchLabels), which fails it.
          body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name }, spec: { targetRef: { apiVersion: 'apps/v1', kind: row.kind, name }, maxUnavailable: row.inPlace.maxUnavailable, prewarm: row.kind !== 'Deployment' } },
        });
      }
      for (const name of names) await until(`the rollout to see ${row.kind} ${name} whole`, 120_000, () => rolloutDone(name));
    }
    await waitReadyEndpoints(kc, NS, APP, total, 120_000);
    await waitForRules({ namespace: NS, name: APP, ...svc }, total);
    await waitServing(clients(svc), 60_000);

    const before = await podsNow();
    const uids = new Set(before.map((p) => p.metadata?.uid ?? ''));
    const ips = new Set(before.map((p) => p.status?.podIP ?? ''));
    const created = new Set<string>();
    const watch = await new Watch(kc).watch(`/api/v1/namespaces/${NS}/pods`, { labelSelector: `app=${APP}`, resourceVersion: '0' }, (_t, p: KubernetesObject) => {
      if (!uids.has(p.metadata?.uid ?? '')) created.add(p.metadata?.uid ?? '');
    }, () => undefined);
    // The idle cluster's own writes (heartbeats, leases), over a window of its own just before, to subtract.
    const idle0 = await readWrites(KUBECTL, env.kubeconfig);
    await sleep(IDLE_MS);
    const counts0 = await readWrites(KUBECTL, env.kubeconfig);
    const idle = writesBetween(idle0, counts0);
    const events0 = await readEvents(core, NS);
    // (A restart patches no image: the timeline's "image patched" stays empty.)
    const timeline = row.inPlace ? new RolloutTimeline(kc, NS, 'app', row.change === 'restart' ? '' : v2) : new StockTimeline(kc, NS, 'app');
    await timeline.start(before);
    let ms = 0;
    // A row that fails still ends its watches (else they hold the process, and the cluster's lock, open).
    const ending = () => {
      watch.abort();
      timeline.stop();
    };
    const { tallies } = await withTraffic(clients(svc), 1000, async () => {
      const began = performance.now();
      timeline.zero();
      const patch = templateChange(row, v2);
      // Every workload's template changed at once (the twin row's two within a few ms).
      const gens = await Promise.all(
        names.map(async (name) =>
          row.kind === 'Deployment'
            ? (await apps.patchNamespacedDeployment({ namespace: NS, name, body: patch }, strategic)).metadata?.generation
            : (await apps.patchNamespacedStatefulSet({ namespace: NS, name, body: patch }, strategic)).metadata?.generation,
        ),
      );
      await until('every pod updated and ready', RUN_TIMEOUT_MS, async () => (await Promise.all(names.map((name, i) => workloadDone(row, name, n, gens[i])))).every((x) => x));
      ms = performance.now() - began;
    }).catch((err: unknown) => {
      ending();
      throw err;
    });
    const counts1 = await readWrites(KUBECTL, env.kubeconfig);
    const events = eventWrites(events0, await readEvents(core, NS));
    ending();
    console.log(timeline.summary().join('\n'));
    const failures = Object.entries(tallies).flatMap(([client, t]) => failureEvents(client, t.log));
    if (failures.length > 0) console.log(timeline.detail(failures).join('\n'));
    const after = await podsNow();
    const writes = netOfIdle(writesBetween(counts0, counts1), counts1.at - counts0.at, idle, counts0.at - idle0.at);
    return { row, pods: total, ms, tallies, podsCreated: created.size, newIps: after.filter((p) => !ips.has(p.status?.podIP ?? '')).length, writes, events };
  }

  const report = (setting: string, n: number, results: Result[]) => {
    const refB = results.find((r) => r.row.key === "b'");
    const refD = results.find((r) => r.row.key === "d'");
    console.log(`\n${setting}, N=${n}:`);
    const stock = results.find((r) => r.row.key === 'b');
    const stockD = results.find((r) => r.row.key === 'd');
    console.log('| row | time | vs stock with preStop: (b\'), or (d\') for a Deployment | failed requests (new conn / keep-alive) | pods created (scheduler decisions) | new pod IPs | API writes per pod, net of idle | stored writes per pod | stored vs stock (b), or (d) for a Deployment |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const r of results) {
      const f = `${r.tallies.newConnection?.failed ?? '?'} / ${r.tallies.keepAlive?.failed ?? '?'}`;
      const w = r.writes.total / r.pods;
      const st = stored(r.writes).total / r.pods;
      // Against the stock row of the same kind, per pod (the twin row's pods are 2N).
      const same = r.row.kind === 'Deployment' ? stockD : stock;
      const ref = r.row.kind === 'Deployment' ? refD : refB;
      console.log(`| (${r.row.key}) ${r.row.label} | ${(r.ms / 1000).toFixed(1)} s | ${ref ? (r.ms / ref.ms).toFixed(2) : '-'} | ${f} | ${r.podsCreated} | ${r.newIps} | ${w.toFixed(1)} (idle's ${(r.writes.background / r.pods).toFixed(1)} taken off) | ${st.toFixed(1)} | ${same ? (st / (stored(same.writes).total / same.pods)).toFixed(2) : '-'} |`);
    }
    const restart = results.find((r) => r.row.key === 'r');
    const setImage = results.find((r) => r.row.key === 'f');
    if (restart && setImage) console.log(`\n(r) kubectl rollout restart vs (f) kubectl set image, in place: ${(restart.ms / setImage.ms).toFixed(2)}x`);
    console.log(`\nwhere the writes go, per pod (${setting}, N=${n}; RESOURCE[/SUBRESOURCE] VERB, most first):`);
    for (const r of results) console.log(`  (${r.row.key}) ${perPod(r.writes, r.pods, 14)}`);
    console.log(`\nwhose Events, per pod (${setting}, N=${n}; REPORTER REASON POST+PATCH, the namespace's only):`);
    for (const r of results) console.log(`  (${r.row.key}) ${eventLine(r.events, r.pods)}`);
  };

  try {
    for (const setting of SETTINGS) {
      proxy.setRate(setting === 'remote' ? RATE_MIB * MiB : 0);
      const registry = setting === 'remote' ? proxy.host : env.sandbox.registry;
      const v1 = setting === 'remote' ? base.replace(env.sandbox.registry, proxy.host) : base;
      const growth = new Map<string, string[]>();
      for (const n of SIZES) {
        const results: Result[] = [];
        for (const row of rowsAt(n)) {
          const seed = randomBytes(4).toString('hex');
          const layer = buildLayer([{ path: `bench/${seed}`, data: seededBytes(seed, LAYER_MIB * MiB) }]);
          const v2 = (await extendImage(env.sandbox.registry, base, `bench-rollout-${seed}`, layer)).replace(env.sandbox.registry, registry);
          // A row that fails is said and left out; the others still run (one long run, on a shared cluster).
          const r = await runOnce(row, n, v1, v2).catch((err: unknown) => {
            console.log(`  ${setting} N=${n} (${row.key}): FAILED: ${err instanceof Error ? err.message : String(err)}`);
            return undefined;
          });
          if (!r) continue;
          console.log(`  ${setting} N=${n} (${r.row.key}): ${(r.ms / 1000).toFixed(1)} s, failed ${r.tallies.newConnection?.failed}/${r.tallies.keepAlive?.failed}, pods created ${r.podsCreated}, new IPs ${r.newIps}, writes ${r.writes.total.toFixed(0)} net`);
          results.push(r);
        }
        report(setting, n, results);
        for (const r of results) growth.set(r.row.key, [...(growth.get(r.row.key) ?? []), `N=${n} ${(r.ms / 1000).toFixed(1)} s (${(r.ms / 1000 / n).toFixed(2)} s a pod)`]);
      }
      if (SIZES.length > 1) {
        console.log(`\nhow time grows with N (${setting}):`);
        for (const [key, cells] of growth) console.log(`  (${key}) ${cells.join(', ')}`);
      }
    }
  } finally {
    await cleanUp().catch(() => undefined);
    await proxy.close();
    await rbac.release().catch(() => undefined);
    await core.deleteNamespace({ name: NS }).catch(() => undefined);
  }
}

// Ends the process once done: nothing the bench started may keep it (and the lock it runs under) alive.
main().then(() => process.exit(0), (err: unknown) => {
  console.error(`bench:rollout failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
