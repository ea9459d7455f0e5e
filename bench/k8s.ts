// `npm run bench:k8s`: restarts on the real cluster (scripts/kube-sandbox), each timed from the first call two
// ways: until the pod's status in the API server shows the result, and until the new container's start as the
// runtime records it (its CRI started_at, read from the node's containerd). Rounds interleave the scenarios;
// medians over BENCH_ROUNDS (default 5). The baselines are what the kubelet does on its own:
//   (b) the container stopped through the CRI, the kubelet starting the next instance;
//   (d) one container's image patched in the pod spec, the kubelet recreating only it;
//   (e) the whole pod deleted and created again: the same name once the old one is gone (a StatefulSet's way,
//       and the only way to recreate "the" pod);
//   (r) for reference, a replacement created at once under a new name (a ReplicaSet's way), no target.
// The agent's rows: (a) same-image restart; (c) image change. BENCH_AGENT picks the agent:
//   host (default): this build's agent, started by the bench as a host process on the first node's containerd
//     with the shipped ServiceAccount's rights (deploy/), requests sent to its socket; it logs each operation's
//     step trace, summarised at the end. (Not through a ContainerRestart: on a cluster with the DaemonSet, its
//     agent on the node would race this one for every object.)
//   ds: the DaemonSet's agent (scripts/kube-deploy-agent first), through ContainerRestart objects;
//   0: the baselines only.
// Pods live in the namespace BENCH_NAMESPACE (default inplace-bench-<pid>), deleted at the end. The targets a/b,
// c/d, c/e are printed for whichever pairs were measured.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions, Watch, type V1Pod } from '@kubernetes/client-node';
import { CriRuntime } from '../src/runtime/cri/cri-runtime.js';
import { kubeEnv } from '../test/testbed/kube-env.js';
import { agentKubeconfig } from '../test/support/kube-shipped-rbac.js';
import type { OperationView as Operation } from '../src/api/convert.js';
import { apiStatusCode } from '../src/k8s/api-error.js';
import { launchAgent, type LaunchedAgent } from './agent-launch.js';
import { traceSummary } from './trace-summary.js';

const env = kubeEnv();
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
/** The rows to run, by key (e.g. `abcd`); all by default. */
const ROWS = process.env.BENCH_ROWS ?? 'abcder';
/**
 * The kubelet's reaction to a patch (its cue to the new container's start) is bimodal on this cluster: about
 * 0.3 s, or 1.5-2 s. Rounds are classed by it at this bound, ms, so that rows are compared class with class.
 */
const SLOW_REACTION_MS = 1000;
const NS = process.env.BENCH_NAMESPACE ?? `inplace-bench-${process.pid}`;
const AGENT = process.env.BENCH_AGENT ?? 'host';
const CONTAINERS = ['app', 'sidecar', 'logger'];
// The kubelet starts a container again at once only the first time; later restarts of the same container
// wait out its back-off (capped at 1 s in the test cluster). So rounds of (b) and (d) each use a fresh pod,
// created before the clock starts.

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const now = () => Number(process.hrtime.bigint()) / 1e6;

/** A round's clock: monotonic for the status, and the wall clock the runtime's started_at is compared with. */
function clockStart(): { t0: number; wall0: number } {
  return { t0: now(), wall0: Date.now() };
}

/**
 * The times of a round whose pod p (as the status showed it) runs the new `app` container. The kubelet's cue
 * (see RoundTimes.cue) is cueWall (epoch ms) when given, else the old container's finish as the runtime records it.
 */
async function times(rt: CriRuntime, p: V1Pod, start: { t0: number; wall0: number }, oldId: string, cueWall?: number): Promise<RoundTimes> {
  const status = now() - start.t0;
  const id = appStatus(p)?.containerID?.replace(/^containerd:\/\//, '') ?? '';
  const started = (await rt.inspectContainer(id)).startedAt;
  if (!started) throw new Error(`container ${id} has no start time in the runtime`);
  const finished = cueWall ?? (await rt.inspectContainer(oldId).then((c) => c.finishedAt?.getTime(), () => undefined));
  return { status, runtime: started.getTime() - start.wall0, cue: finished === undefined ? NaN : finished - start.wall0 };
}

/** The container id in a pod status's containerID (runtime://id). */
const bareId = (containerID: string | undefined) => containerID?.replace(/^containerd:\/\//, '') ?? '';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One round's times from the first call, ms: until the API status showed it, and until the runtime's started_at. */
export interface RoundTimes {
  status: number;
  runtime: number;
  /**
   * Until the kubelet's cue: the old container's finish as the runtime records it (a stop: the kubelet starts
   * the next at its next relist), or the new image first seen in the pod's spec by the bench's watch (a patch:
   * the kubelet acts on the same watch event). runtime - cue is the kubelet's reaction. NaN when unknown.
   */
  cue: number;
}

/** One measured way of restarting the `app` container of a pod. */
export interface Scenario {
  key: string;
  label: string;
  /** Untimed preparation before round i (e.g. a fresh pod). */
  prepare(i: number): Promise<void>;
  round(i: number): Promise<RoundTimes>;
  /** Untimed clean-up after round i. */
  cleanup(i: number): Promise<void>;
}

function podBody(name: string, image: string): V1Pod {
  return {
    metadata: { name, namespace: NS, labels: { bench: name.replace(/-\d+$/, '') } },
    spec: {
      terminationGracePeriodSeconds: 10,
      restartPolicy: 'Always',
      // scheduled as usual, onto the first node (whose runtime the bench reads); the cluster may have more
      nodeSelector: { 'kubernetes.io/hostname': env.nodeName },
      containers: CONTAINERS.map((n) => ({ name: n, image: n === 'app' ? image : env.sandbox.images.appV1 })),
    },
  };
}

/** Records (epoch ms) when a watched pod's spec first names image for `app`: the kubelet's cue after a patch. */
function specImageSeen(image: string): { seen: (p: V1Pod) => void; at: () => number | undefined } {
  let at: number | undefined;
  return {
    seen: (p) => {
      if (at === undefined && p.spec?.containers.find((c) => c.name === 'app')?.image === image) at = Date.now();
    },
    at: () => at,
  };
}

function appStatus(p: V1Pod) {
  return p.status?.containerStatuses?.find((c) => c.name === 'app');
}

function allRunning(p: V1Pod): boolean {
  const st = p.status?.containerStatuses ?? [];
  return st.length === CONTAINERS.length && st.every((c) => c.ready && c.state?.running);
}

class Cluster {
  readonly core: CoreV1Api;
  private readonly watch: Watch;
  constructor(kc: KubeConfig) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.watch = new Watch(kc);
  }

  read(name: string): Promise<V1Pod> {
    return this.core.readNamespacedPod({ name, namespace: NS });
  }

  /**
   * Resolves with the pod as soon as a watch on it shows done(pod) (its first event is the pod as it is now);
   * fails after ms. A watch, not a tight poll: the measuring itself loads neither the API server nor the CPU
   * the agent and the kubelet share.
   */
  async until(name: string, ms: number, done: (p: V1Pod) => boolean, seen?: (p: V1Pod) => void): Promise<V1Pod> {
    const w = await this.follow(name, ms, done, seen);
    return w.result;
  }

  /**
   * As until(), in two parts: resolves once the watch is established (its first event, the pod as it is now, is
   * in), with result, which resolves as until() does. A round that times the kubelet's cue from the watch arms it
   * before its first call.
   */
  async follow(name: string, ms: number, done: (p: V1Pod) => boolean, seen?: (p: V1Pod) => void): Promise<{ result: Promise<V1Pod> }> {
    let last: V1Pod | undefined;
    let settle: (p: V1Pod | Error) => void = () => undefined;
    let firstEvent: () => void = () => undefined;
    const armed = new Promise<void>((r) => (firstEvent = r));
    const outcome = new Promise<V1Pod | Error>((r) => (settle = r));
    const timer = setTimeout(() => settle(new Error(`pod ${NS}/${name}: timed out; last status ${JSON.stringify(last?.status?.containerStatuses)}`)), ms);
    const start = async (): Promise<AbortController> =>
      this.watch.watch(
        `/api/v1/namespaces/${NS}/pods`,
        { fieldSelector: `metadata.name=${name}` },
        (_type, p: V1Pod) => {
          last = p;
          firstEvent();
          seen?.(p);
          if (done(p)) settle(p);
        },
        // The API server may end a watch: start another (it begins with the pod as it is then).
        () => {
          if (!over) void start().then((w) => (current = w), () => undefined);
        },
      );
    let over = false;
    let current = await start();
    await Promise.race([armed, outcome]);
    const result = outcome.then((out) => {
      over = true;
      clearTimeout(timer);
      current.abort();
      if (out instanceof Error) throw out;
      return out;
    });
    return { result };
  }

  async create(name: string, image: string): Promise<void> {
    await this.core.createNamespacedPod({ namespace: NS, body: podBody(name, image) });
    await this.until(name, 120_000, allRunning);
  }

  /** Resolves once the API server no longer has the pod (polled: a watch of a deleted object ends with it). */
  async gone(name: string, ms: number): Promise<void> {
    const deadline = now() + ms;
    for (;;) {
      const absent = await this.read(name).then(
        () => false,
        (err: unknown) => apiStatusCode(err) === 404,
      );
      if (absent) return;
      if (now() > deadline) throw new Error(`pod ${NS}/${name} still there after ${ms} ms`);
      await sleep(25);
    }
  }

  async remove(name: string): Promise<void> {
    await this.core.deleteNamespacedPod({ name, namespace: NS, gracePeriodSeconds: 0 }).catch(() => undefined);
  }
}

function baselines(k: Cluster, rt: CriRuntime): Scenario[] {
  return [
    {
      key: 'b',
      label: 'container stopped through the CRI, kubelet starts the next',
      prepare: (i) => k.create(`bench-b-${i}`, env.sandbox.images.appV1),
      async round(i) {
        const name = `bench-b-${i}`;
        const before = appStatus(await k.read(name));
        const oldId = bareId(before?.containerID);
        const t = clockStart();
        await rt.stopContainer(oldId, 10);
        const p = await k.until(name, 60_000, (p) => {
          const st = appStatus(p);
          return !!st?.state?.running && st.containerID !== before?.containerID && allRunning(p);
        });
        return times(rt, p, t, oldId);
      },
      cleanup: (i) => k.remove(`bench-b-${i}`),
    },
    {
      key: 'd',
      label: "one container's image patched in the pod spec",
      prepare: (i) => k.create(`bench-d-${i}`, env.sandbox.images.appV1),
      async round(i) {
        const name = `bench-d-${i}`;
        const image = env.sandbox.images.appV2;
        const before = appStatus(await k.read(name));
        const cue = specImageSeen(image);
        const w = await k.follow(
          name,
          60_000,
          (p) => {
            const st = appStatus(p);
            return !!st?.state?.running && st.containerID !== before?.containerID && st.image === image && allRunning(p);
          },
          cue.seen,
        );
        const t = clockStart();
        await k.core.patchNamespacedPod(
          { name, namespace: NS, body: { spec: { containers: [{ name: 'app', image }] } } },
          setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
        );
        return times(rt, await w.result, t, bareId(before?.containerID), cue.at());
      },
      cleanup: (i) => k.remove(`bench-d-${i}`),
    },
    {
      key: 'e',
      label: 'whole pod deleted and created again (same name, once the old one is gone, as a StatefulSet does)',
      prepare: (i) => k.create(`bench-e-${i}`, env.sandbox.images.appV1),
      async round(i) {
        const name = `bench-e-${i}`;
        const t = clockStart();
        await k.core.deleteNamespacedPod({ name, namespace: NS });
        await k.gone(name, 60_000);
        await k.core.createNamespacedPod({ namespace: NS, body: podBody(name, env.sandbox.images.appV1) });
        return times(rt, await k.until(name, 60_000, allRunning), t, '', NaN);
      },
      cleanup: (i) => k.remove(`bench-e-${i}`),
    },
    {
      key: 'r',
      label: 'whole pod replaced: deleted, a new one (new name) created at once, as a ReplicaSet does',
      prepare: (i) => k.create(`bench-r-${i}`, env.sandbox.images.appV1),
      async round(i) {
        const t = clockStart();
        await k.core.deleteNamespacedPod({ name: `bench-r-${i}`, namespace: NS });
        await k.core.createNamespacedPod({ namespace: NS, body: podBody(`bench-r-${i}-new`, env.sandbox.images.appV1) });
        return times(rt, await k.until(`bench-r-${i}-new`, 60_000, allRunning), t, '', NaN);
      },
      cleanup: (i) => k.remove(`bench-r-${i}-new`),
    },
  ];
}

/**
 * A row that changes a fresh pod through an agent: start asks for it, timed until the pod runs the new container
 * (with image, on it); ended then checks, untimed, that the request itself ended well.
 */
function agentRow<T>(k: Cluster, rt: CriRuntime, key: string, label: string, image: string | undefined, start: (name: string) => Promise<T>, ended: (name: string, started: T) => Promise<void>): Scenario {
  return {
    key,
    label,
    prepare: (i) => k.create(`bench-${key}-${i}`, env.sandbox.images.appV1),
    async round(i) {
      const name = `bench-${key}-${i}`;
      const before = appStatus(await k.read(name));
      // A patch is the kubelet's cue: the watch that sees it in the spec is armed before the request.
      const cue = image ? specImageSeen(image) : undefined;
      const w = await k.follow(
        name,
        60_000,
        (p) => {
          const st = appStatus(p);
          return !!st?.state?.running && st.containerID !== before?.containerID && (!image || st.image === image) && allRunning(p);
        },
        cue?.seen,
      );
      const t = clockStart();
      const started = await start(name);
      const ms = await times(rt, await w.result, t, bareId(before?.containerID), cue ? cue.at() : undefined);
      await ended(name, started);
      return ms;
    },
    cleanup: (i) => k.remove(`bench-${key}-${i}`),
  };
}

/** The DaemonSet agent's rows (a: same image, c: new image), each through a ContainerRestart on a fresh pod. */
function daemonSetScenarios(k: Cluster, kc: KubeConfig, rt: CriRuntime): Scenario[] {
  const crs = kc.makeApiClient(CustomObjectsApi);
  const cr = { group: 'inplace-agent.io', version: 'v1alpha1', plural: 'containerrestarts', namespace: NS };
  const viaAgent = (key: string, label: string, image?: string): Scenario => {
    const row = agentRow(
      k,
      rt,
      key,
      label,
      image,
      (name) =>
        crs.createNamespacedCustomObject({
          ...cr,
          body: {
            apiVersion: 'inplace-agent.io/v1alpha1',
            kind: 'ContainerRestart',
            metadata: { name },
            spec: { podName: name, containers: [{ name: 'app', ...(image ? { image } : {}) }], strategy: { minReadySeconds: 0, gracePeriodSeconds: 10 } },
          },
        }),
      async (name) => {
        const deadline = now() + 60_000;
        for (;;) {
          const obj = (await crs.getNamespacedCustomObject({ ...cr, name })) as { status?: { phase?: string } };
          if (obj.status?.phase === 'Succeeded') break;
          if (obj.status?.phase === 'Failed' || now() > deadline) throw new Error(`ContainerRestart ${name}: ${JSON.stringify(obj.status)}`);
          await sleep(100);
        }
      },
    );
    return {
      ...row,
      async cleanup(i) {
        await crs.deleteNamespacedCustomObject({ ...cr, name: `bench-${key}-${i}` }).catch(() => undefined);
        await row.cleanup(i);
      },
    };
  };
  return [
    viaAgent('a', "agent: same-image restart (ContainerRestart, the DaemonSet's agent)"),
    viaAgent('c', 'agent: image change (ContainerRestart)', env.sandbox.images.appV2),
  ];
}

/** The host agent's rows (a: same image, c: new image), each a request to its socket for a fresh pod; ids in ops. */
function hostScenarios(k: Cluster, agent: LaunchedAgent, rt: CriRuntime, ops: Map<string, string[]>): Scenario[] {
  const viaAgent = (key: string, label: string, image?: string): Scenario =>
    agentRow(
      k,
      rt,
      key,
      label,
      image,
      (name) =>
        agent.client.restart({
          pod: `${NS}/${name}`,
          containers: ['app'],
          images: image ? { app: image } : {},
          graceSeconds: 10,
          graceSet: true,
          minReadyMs: '0',
          minReadySet: true,
          timeoutMs: '0',
        }),
      async (name, op) => {
        let last: Operation | undefined;
        for await (const o of agent.client.watchOperation(op.id)) last = o;
        if (last?.state !== 'Succeeded') throw new Error(`operation ${op.id} for ${name} ended ${last?.state}: ${last?.error}`);
        ops.set(key, [...(ops.get(key) ?? []), op.id]);
      },
    );
  return [
    viaAgent('a', 'agent: same-image restart (host-run agent of this build, request to its socket)'),
    viaAgent('c', 'agent: image change (host-run agent of this build, request to its socket)', env.sandbox.images.appV2),
  ];
}

const TARGETS: [string, string, number][] = [
  ['a', 'b', 1.15],
  ['c', 'd', 1.15],
  ['c', 'e', 0.45],
];
/** Ratios printed for reference, without a target. */
const REFERENCE: [string, string][] = [['c', 'r']];

async function main(): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(env.kubeconfig);
  const k = new Cluster(kc);
  try {
    await k.core.readNode({ name: env.nodeName });
  } catch (err) {
    throw new Error(`the test cluster is not reachable (${String(err)}); run \`sudo scripts/kube-sandbox up\` first`);
  }
  const rt = new CriRuntime(env.sandbox.criEndpoint);
  await k.core.deleteNamespace({ name: NS }).catch(() => undefined);
  for (let i = 0; ; i++) {
    const gone = await k.core.readNamespace({ name: NS }).then(() => false, () => true);
    if (gone) break;
    if (i > 600) throw new Error(`namespace ${NS} from an earlier run is not going away`);
    await sleep(100);
  }
  await k.core.createNamespace({ body: { metadata: { name: NS } } });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-bench-k8s-'));
  let agent: LaunchedAgent | undefined;
  let saKubeconfig: string | undefined;
  const ops = new Map<string, string[]>();
  if (AGENT === 'host') {
    // The shipped ServiceAccount's rights, never admin's; its ContainerRestart watch kept to the bench's namespace.
    saKubeconfig = await agentKubeconfig(kc);
    const noKube = { ...process.env };
    delete noKube.KUBECONFIG;
    agent = await launchAgent(
      work,
      'agent',
      ['--runtime', 'cri', '--cri-endpoint', env.sandbox.criEndpoint, '--kubeconfig', saKubeconfig, '--node-name', env.nodeName, '--watch-namespace', NS, '--log-level', 'debug', '--log-format', 'json'],
      noKube,
    );
  } else if (AGENT !== 'ds' && AGENT !== '0') {
    throw new Error(`BENCH_AGENT takes host, ds or 0, not "${AGENT}"`);
  }
  const agentRows = agent ? hostScenarios(k, agent, rt, ops) : AGENT === 'ds' ? daemonSetScenarios(k, kc, rt) : [];
  const scenarios = [...agentRows, ...baselines(k, rt)].filter((x) => ROWS.includes(x.key)).sort((x, y) => x.key.localeCompare(y.key));
  const measured = new Map<string, RoundTimes[]>(scenarios.map((s) => [s.key, []]));
  const loads: number[] = [];
  try {
    process.stdout.write(`bench:k8s: node ${env.nodeName}, namespace ${NS}, agent ${AGENT}, 3-container pods, ${ROUNDS} rounds, until the pod's status shows it / until the runtime's started_at\n`);
    for (let i = 0; i < ROUNDS; i++) {
      // The rows' order turns by one each round, so that no row always follows the same one (a row's pod
      // deletions and creations load the kubelet and the API server the next row meets).
      for (const s of [...scenarios.slice(i % scenarios.length), ...scenarios.slice(0, i % scenarios.length)]) {
        await s.prepare(i);
        loads.push(os.loadavg()[0]);
        const r = await s.round(i);
        await s.cleanup(i);
        measured.get(s.key)?.push(r);
        const cue = Number.isNaN(r.cue) ? '' : `, cue ${r.cue.toFixed(0)} ms, kubelet ${(r.runtime - r.cue).toFixed(0)} ms`;
        process.stdout.write(`  round ${i + 1} (${s.key}) status ${r.status.toFixed(0)} ms, runtime ${r.runtime.toFixed(0)} ms${cue}, load ${loads[loads.length - 1].toFixed(1)}\n`);
      }
    }
  } finally {
    rt.close();
    await agent?.stop();
    // The token's kubeconfig is not left behind.
    if (saKubeconfig) fs.rmSync(path.dirname(saKubeconfig), { recursive: true, force: true });
    await k.core.deleteNamespace({ name: NS }).catch(() => undefined);
  }

  const range = (xs: number[]) => {
    const ok = xs.filter((x) => !Number.isNaN(x));
    return ok.length === 0 ? '-' : `${median(ok).toFixed(0)} ms (${Math.min(...ok).toFixed(0)}-${Math.max(...ok).toFixed(0)})`;
  };
  const lines = [
    '',
    '| | what | status: median (min-max) | runtime started_at: median (min-max) | to the kubelet\'s cue | kubelet: cue to start |',
    '|---|---|---|---|---|---|',
  ];
  for (const s of scenarios) {
    const rs = measured.get(s.key) ?? [];
    lines.push(`| (${s.key}) | ${s.label} | ${range(rs.map((r) => r.status))} | ${range(rs.map((r) => r.runtime))} | ${range(rs.map((r) => r.cue))} | ${range(rs.map((r) => r.runtime - r.cue))} |`);
  }
  // The distribution, sorted: each round's runtime time, with its part before the cue and the kubelet's after it.
  lines.push('each round, sorted by the runtime clock (ms: total = to the cue + the kubelet\'s part):');
  for (const s of scenarios) {
    const rs = [...(measured.get(s.key) ?? [])].sort((x, y) => x.runtime - y.runtime);
    lines.push(`  (${s.key}) ${rs.map((r) => (Number.isNaN(r.cue) ? r.runtime.toFixed(0) : `${r.runtime.toFixed(0)}=${r.cue.toFixed(0)}+${(r.runtime - r.cue).toFixed(0)}`)).join(' ')}`);
  }
  for (const clock of ['status', 'runtime'] as const) {
    const med = new Map([...measured].map(([key, rs]) => [key, median(rs.map((r) => r[clock]))]));
    for (const [x, y, target] of TARGETS) {
      const mx = med.get(x);
      const my = med.get(y);
      if (mx === undefined || my === undefined || Number.isNaN(mx) || Number.isNaN(my)) {
        lines.push(`${x}/${y} (${clock}): not measured`);
      } else {
        const r = mx / my;
        lines.push(`${x}/${y} (${clock}) = ${r.toFixed(2)} (target <= ${target}) ${r <= target ? 'ok' : 'MISSED'}`);
      }
    }
    for (const [x, y] of REFERENCE) {
      const mx = med.get(x);
      const my = med.get(y);
      if (mx !== undefined && my !== undefined) lines.push(`${x}/${y} (${clock}) = ${(mx / my).toFixed(2)} (reference, no target)`);
    }
  }
  // Each round's time is the caller's part (request to the kubelet's cue) plus the kubelet's (cue to the start).
  // The kubelet's part does not depend on who gave the cue, but it is noisy: after a stop it waits for its next
  // relist (every second, at a random phase); after a patch it is bimodal here (about 0.3 s, or 1.2-2 s). With
  // ten rounds a row, that noise moves a ratio of medians by 0.1-0.3 either way. So the rows are also compared
  // with the kubelet's part pooled over both rows of a pair (per class of reaction, for a patch):
  //   (median to the cue of x + pooled kubelet part) / (median to the cue of y + the same),
  // which keeps the callers' measured difference and gives both the same kubelet.
  const cues = (key: string) => (measured.get(key) ?? []).map((q) => q.cue).filter((x) => !Number.isNaN(x));
  const reactions = (keys: string[], keep: (ms: number) => boolean = () => true) =>
    keys.flatMap((k) => (measured.get(k) ?? []).filter((q) => !Number.isNaN(q.cue)).map((q) => q.runtime - q.cue)).filter(keep);
  const pooled = (x: string, y: string, target: number, what: string, keep?: (ms: number) => boolean) => {
    const k = reactions([x, y], keep);
    if (cues(x).length === 0 || cues(y).length === 0 || k.length === 0) return `  ${x}/${y} ${what}: not measured`;
    const [cx, cy, kk] = [median(cues(x)), median(cues(y)), median(k)];
    const r = (cx + kk) / (cy + kk);
    return `  ${x}/${y} ${what}: (${cx.toFixed(0)} + ${kk.toFixed(0)}) / (${cy.toFixed(0)} + ${kk.toFixed(0)}) = ${r.toFixed(2)} (target <= ${target}) ${r <= target ? 'ok' : 'MISSED'}; the caller's part ${cx.toFixed(0)} vs ${cy.toFixed(0)} ms, a difference of ${(cx - cy).toFixed(0)} ms`;
  };
  lines.push("with the kubelet's part pooled over both rows (median of all their rounds' cue-to-start), runtime clock:");
  if (measured.has('a') && measured.has('b')) lines.push(pooled('a', 'b', 1.15, `(kubelet ${median(reactions(['a', 'b'])).toFixed(0)} ms over ${reactions(['a', 'b']).length} rounds)`));
  if (measured.has('c') && measured.has('d')) {
    const fast = (ms: number) => ms < SLOW_REACTION_MS;
    const slow = (ms: number) => ms >= SLOW_REACTION_MS;
    lines.push(pooled('c', 'd', 1.15, `kubelet fast (${reactions(['c', 'd'], fast).length} of ${reactions(['c', 'd']).length} rounds react under ${SLOW_REACTION_MS} ms)`, fast));
    lines.push(pooled('c', 'd', 1.15, `kubelet slow (${reactions(['c', 'd'], slow).length} rounds)`, slow));
  }
  lines.push(`c/d by the kubelet's reaction to the patch, the rounds' own times (cue to the new container's start, runtime clock; slow from ${SLOW_REACTION_MS} ms):`);
  for (const [x, y, target] of TARGETS.filter(([x, y]) => x === 'c' && y === 'd')) {
    for (const slow of [false, true]) {
      const pick = (key: string) => (measured.get(key) ?? []).filter((r) => !Number.isNaN(r.cue) && r.runtime - r.cue >= SLOW_REACTION_MS === slow);
      const [rx, ry] = [pick(x), pick(y)];
      const what = slow ? 'slow' : 'fast';
      if (rx.length === 0 || ry.length === 0) {
        lines.push(`  ${x}/${y} ${what}: ${rx.length} and ${ry.length} rounds, not comparable`);
        continue;
      }
      const r = median(rx.map((q) => q.runtime)) / median(ry.map((q) => q.runtime));
      lines.push(`  ${x}/${y} ${what} (${rx.length} and ${ry.length} rounds): ${r.toFixed(2)} (target <= ${target}) ${r <= target ? 'ok' : 'MISSED'}; to the cue ${median(rx.map((q) => q.cue)).toFixed(0)} vs ${median(ry.map((q) => q.cue)).toFixed(0)} ms`);
    }
  }
  lines.push(`load average (1 min) at the rounds' starts: median ${median(loads).toFixed(1)} (${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}) on ${os.cpus().length} CPUs`);
  if (agent) {
    for (const [key, ids] of ops) {
      lines.push(`(${key}), where the agent's time went (its own clock, from the request's arrival):`);
      lines.push(...traceSummary(agent.logFile, ids, '  '));
    }
  }
  fs.rmSync(work, { recursive: true, force: true });
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:k8s: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
