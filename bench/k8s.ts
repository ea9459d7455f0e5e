// `npm run bench:k8s`: restarts on the real one-node cluster (scripts/kube-sandbox), each timed from the first
// call two ways: until the pod's status in the API server shows the result, and until the new container's start
// as the runtime records it (its CRI started_at, read from the node's containerd). Rounds interleave the
// scenarios; medians over BENCH_ROUNDS (default 5). The baselines are what the kubelet does on its own:
//   (b) the container stopped through the CRI, the kubelet starting the next instance;
//   (d) one container's image patched in the pod spec, the kubelet recreating only it;
//   (e) the whole pod deleted and created again: the same name once the old one is gone (a StatefulSet's way,
//       and the only way to recreate "the" pod);
//   (r) for reference, a replacement created at once under a new name (a ReplicaSet's way), no target.
// The agent's rows, through a ContainerRestart handled by the DaemonSet's agent (scripts/kube-deploy-agent
// first; BENCH_AGENT=0 leaves them out):
//   (a) same-image restart;  (c) image change.
// The targets a/b, c/d, c/e are printed for whichever pairs were measured.
import { CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions, Watch, type V1Pod } from '@kubernetes/client-node';
import { CriRuntime } from '../src/runtime/cri/cri-runtime.js';
import { kubeEnv } from '../test/testbed/kube-env.js';

const env = kubeEnv();
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const NS = 'inplace-bench';
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

/** The times of a round whose pod p (as the status showed it) runs the new `app` container. */
async function times(rt: CriRuntime, p: V1Pod, start: { t0: number; wall0: number }): Promise<RoundTimes> {
  const status = now() - start.t0;
  const id = appStatus(p)?.containerID?.replace(/^containerd:\/\//, '') ?? '';
  const started = (await rt.inspectContainer(id)).startedAt;
  if (!started) throw new Error(`container ${id} has no start time in the runtime`);
  return { status, runtime: started.getTime() - start.wall0 };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One round's times from the first call, ms: until the API status showed it, and until the runtime's started_at. */
export interface RoundTimes {
  status: number;
  runtime: number;
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
  async until(name: string, ms: number, done: (p: V1Pod) => boolean): Promise<V1Pod> {
    let last: V1Pod | undefined;
    let settle: (p: V1Pod | Error) => void = () => undefined;
    const result = new Promise<V1Pod | Error>((r) => (settle = r));
    const timer = setTimeout(() => settle(new Error(`pod ${NS}/${name}: timed out; last status ${JSON.stringify(last?.status?.containerStatuses)}`)), ms);
    const start = async (): Promise<AbortController> =>
      this.watch.watch(
        `/api/v1/namespaces/${NS}/pods`,
        { fieldSelector: `metadata.name=${name}` },
        (_type, p: V1Pod) => {
          last = p;
          if (done(p)) settle(p);
        },
        // The API server may end a watch: start another (it begins with the pod as it is then).
        () => {
          if (!over) void start().then((w) => (current = w), () => undefined);
        },
      );
    let over = false;
    let current = await start();
    const out = await result;
    over = true;
    clearTimeout(timer);
    current.abort();
    if (out instanceof Error) throw out;
    return out;
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
        (err: unknown) => (err as { code?: number }).code === 404,
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
        const oldId = before?.containerID?.replace(/^containerd:\/\//, '') ?? '';
        const t = clockStart();
        await rt.stopContainer(oldId, 10);
        const p = await k.until(name, 60_000, (p) => {
          const st = appStatus(p);
          return !!st?.state?.running && st.containerID !== before?.containerID && allRunning(p);
        });
        return times(rt, p, t);
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
        const t = clockStart();
        await k.core.patchNamespacedPod(
          { name, namespace: NS, body: { spec: { containers: [{ name: 'app', image }] } } },
          setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
        );
        const p = await k.until(name, 60_000, (p) => {
          const st = appStatus(p);
          return !!st?.state?.running && st.containerID !== before?.containerID && st.image === image && allRunning(p);
        });
        return times(rt, p, t);
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
        return times(rt, await k.until(name, 60_000, allRunning), t);
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
        return times(rt, await k.until(`bench-r-${i}-new`, 60_000, allRunning), t);
      },
      cleanup: (i) => k.remove(`bench-r-${i}-new`),
    },
  ];
}

/** The agent's rows (a: same image, c: new image), each through a ContainerRestart on a fresh pod. */
function agentScenarios(k: Cluster, kc: KubeConfig, rt: CriRuntime): Scenario[] {
  if (process.env.BENCH_AGENT === '0') return [];
  const crs = kc.makeApiClient(CustomObjectsApi);
  const cr = { group: 'inplace-agent.io', version: 'v1alpha1', plural: 'containerrestarts', namespace: NS };
  const viaAgent = (key: string, label: string, image?: string): Scenario => ({
    key,
    label,
    prepare: (i) => k.create(`bench-${key}-${i}`, env.sandbox.images.appV1),
    async round(i) {
      const name = `bench-${key}-${i}`;
      const before = appStatus(await k.read(name));
      const t = clockStart();
      await crs.createNamespacedCustomObject({
        ...cr,
        body: {
          apiVersion: 'inplace-agent.io/v1alpha1',
          kind: 'ContainerRestart',
          metadata: { name },
          spec: { podName: name, containers: [{ name: 'app', ...(image ? { image } : {}) }], strategy: { minReadySeconds: 0, gracePeriodSeconds: 10 } },
        },
      });
      const p = await k.until(name, 60_000, (p) => {
        const st = appStatus(p);
        return !!st?.state?.running && st.containerID !== before?.containerID && (!image || st.image === image) && allRunning(p);
      });
      const ms = await times(rt, p, t);
      // untimed: the request must also have ended well
      const deadline = now() + 60_000;
      for (;;) {
        const obj = (await crs.getNamespacedCustomObject({ ...cr, name })) as { status?: { phase?: string } };
        if (obj.status?.phase === 'Succeeded') break;
        if (obj.status?.phase === 'Failed' || now() > deadline) throw new Error(`ContainerRestart ${name}: ${JSON.stringify(obj.status)}`);
        await sleep(100);
      }
      return ms;
    },
    async cleanup(i) {
      await crs.deleteNamespacedCustomObject({ ...cr, name: `bench-${key}-${i}` }).catch(() => undefined);
      await k.remove(`bench-${key}-${i}`);
    },
  });
  return [
    viaAgent('a', "agent: same-image restart (ContainerRestart, the DaemonSet's agent)"),
    viaAgent('c', 'agent: image change (ContainerRestart)', env.sandbox.images.appV2),
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
  const scenarios = [...agentScenarios(k, kc, rt), ...baselines(k, rt)].sort((x, y) => x.key.localeCompare(y.key));
  const measured = new Map<string, RoundTimes[]>(scenarios.map((s) => [s.key, []]));
  try {
    process.stdout.write(`bench:k8s: node ${env.nodeName}, 3-container pods, ${ROUNDS} rounds, until the pod's status shows it / until the runtime's started_at\n`);
    for (let i = 0; i < ROUNDS; i++) {
      for (const s of scenarios) {
        await s.prepare(i);
        const r = await s.round(i);
        await s.cleanup(i);
        measured.get(s.key)?.push(r);
        process.stdout.write(`  round ${i + 1} (${s.key}) status ${r.status.toFixed(0)} ms, runtime ${r.runtime.toFixed(0)} ms\n`);
      }
    }
  } finally {
    rt.close();
    await k.core.deleteNamespace({ name: NS }).catch(() => undefined);
  }

  const lines = ['', '| | what | status: median (min-max) | runtime started_at: median (min-max) |', '|---|---|---|---|'];
  const range = (xs: number[]) => `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`;
  for (const s of scenarios) {
    const rs = measured.get(s.key) ?? [];
    lines.push(`| (${s.key}) | ${s.label} | ${range(rs.map((r) => r.status))} | ${range(rs.map((r) => r.runtime))} |`);
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
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:k8s: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
