// Where an in-place rollout's time goes, seen from outside: while a run of bench:rollout is timed, one watch each
// on the namespace's pods, EndpointSlices and ContainerRestarts, the rollout's ImagePrewarm and the rollout
// itself notes when each step became visible (the bench's own monotonic clock, ms after the template change):
//
//   rollout:  template change -> pre-warm created -> pre-warm done (status) -> first ContainerRestart created
//   per pod:  ContainerRestart created -> taken (status.nodeName) -> gate False -> pod Ready False
//             -> endpoint not ready (slice) -> image patched -> new container running -> container ready
//             -> gate True -> pod Ready True -> endpoint ready (slice) -> ContainerRestart Succeeded -> relabelled
//   between:  one pod's step -> the next pod's ContainerRestart created
//
// Each step is the first time it was seen after the pod's ContainerRestart was created. The summary gives the
// median over the pods of each step's time after "created", and the median gaps to the next pod's creation.
import { Watch, type KubeConfig, type KubernetesObject, type V1EndpointSlice, type V1Pod } from '@kubernetes/client-node';
import { READY_CONDITION } from '../src/kube/ready-condition.js';
import type { ContainerRestart } from '../src/controllers/container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, type ImagePrewarm } from '../src/controllers/image-prewarm/types.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, ROLLOUT_LABEL, type InPlaceRollout } from '../src/controllers/rollout/types.js';

/** The per-pod steps, in the order they normally happen. */
export const POD_STEPS = [
  'created',
  'taken',
  'gate False',
  'Ready False',
  'endpoint not ready',
  'image patched',
  'new container running',
  'container ready',
  'gate True',
  'Ready True',
  'endpoint ready',
  'Succeeded',
  'relabelled',
] as const;
type PodStep = (typeof POD_STEPS)[number];

const median = (xs: number[]): number | undefined => {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const cond = (p: V1Pod, type: string) => p.status?.conditions?.find((c) => c.type === type)?.status;

/** Records one run's steps; start() before the template change, stop() after the run. */
export class RolloutTimeline {
  private t0 = 0;
  /** The template change on the epoch clock (for events timed by Date.now, such as the clients' failures). */
  private epoch0 = 0;
  /** zero() was called: objects seen before (the initial lists) are not this run's. */
  private running = false;
  /** The rollout's phase as last seen. */
  private phase?: string;
  private readonly aborts: AbortController[] = [];
  private readonly rollout: Record<string, number> = {};
  private readonly pods = new Map<string, Partial<Record<PodStep, number>>>();
  /** Per pod: its IP and first container id of `container` when the run began. */
  private readonly before = new Map<string, { ip?: string; id?: string; hash?: string }>();
  private readonly traffic = new Map<string, string>();

  constructor(
    private readonly kc: KubeConfig,
    private readonly ns: string,
    /** The container whose image changes. */
    private readonly container: string,
    /** The new image. */
    private readonly image: string,
  ) {}

  /** Watches (the run's steps count from zero() on); `pods` are the pods as the run began. */
  async start(pods: V1Pod[]): Promise<void> {
    for (const p of pods) {
      this.before.set(p.metadata?.name ?? '', {
        ip: p.status?.podIP,
        id: p.status?.containerStatuses?.find((c) => c.name === this.container)?.containerID,
        hash: p.metadata?.labels?.['controller-revision-hash'],
      });
    }
    const w = new Watch(this.kc);
    const on = async <T>(path: string, handle: (o: T) => void, labelSelector?: string) => {
      this.aborts.push(await w.watch(path, { resourceVersion: '0', ...(labelSelector ? { labelSelector } : {}) }, (_t, o: KubernetesObject) => handle(o as T), () => undefined));
    };
    await Promise.all([
      on<V1Pod>(`/api/v1/namespaces/${this.ns}/pods`, (p) => this.pod(p)),
      on<V1EndpointSlice>(`/apis/discovery.k8s.io/v1/namespaces/${this.ns}/endpointslices`, (s) => this.slice(s)),
      on<ContainerRestart>(`/apis/inplace-agent.io/v1alpha1/namespaces/${this.ns}/containerrestarts`, (cr) => this.restart(cr)),
      on<InPlaceRollout>(`/apis/${IPR_GROUP}/${IPR_VERSION}/namespaces/${this.ns}/${IPR_PLURAL}`, (r) => this.ipr(r)),
      on<ImagePrewarm>(`/apis/${FLEET_GROUP}/${FLEET_VERSION}/${IMAGE_PREWARM_PLURAL}`, (pw) => this.prewarm(pw), ROLLOUT_LABEL),
    ]);
  }

  /** The instant the run's clock starts (the template change). */
  zero(): void {
    this.t0 = performance.now();
    this.epoch0 = Date.now();
    this.running = true;
  }

  stop(): void {
    for (const a of this.aborts) a.abort();
  }

  private now(): number {
    return performance.now() - this.t0;
  }

  private mark(pod: string, step: PodStep): void {
    const m = this.pods.get(pod);
    // Steps count only once the pod's ContainerRestart of this run exists.
    if (!m || (step !== 'created' && m.created === undefined) || m[step] !== undefined) return;
    m[step] = this.now();
  }

  private once(what: string): void {
    this.rollout[what] ??= this.now();
  }

  private restart(cr: ContainerRestart): void {
    const pod = cr.spec.podName;
    if (!this.running) return;
    if (!this.pods.has(pod)) {
      this.pods.set(pod, {});
      this.mark(pod, 'created');
      this.once('first ContainerRestart created');
    }
    if (cr.status?.nodeName) this.mark(pod, 'taken');
    if (cr.status?.phase === 'Succeeded') this.mark(pod, 'Succeeded');
    const t = cr.status?.containers?.find((c) => c.name === this.container)?.traffic;
    if (t) this.traffic.set(pod, t);
  }

  private pod(p: V1Pod): void {
    const name = p.metadata?.name ?? '';
    if (!this.pods.has(name)) return;
    const m = this.pods.get(name)!;
    if (cond(p, READY_CONDITION) === 'False') this.mark(name, 'gate False');
    if (cond(p, 'Ready') === 'False') this.mark(name, 'Ready False');
    if (p.spec?.containers?.find((c) => c.name === this.container)?.image === this.image) this.mark(name, 'image patched');
    const cs = p.status?.containerStatuses?.find((c) => c.name === this.container);
    const fresh = cs?.containerID && cs.containerID !== this.before.get(name)?.id;
    if (fresh && cs?.state?.running) this.mark(name, 'new container running');
    if (fresh && cs?.ready) this.mark(name, 'container ready');
    if (m['gate False'] !== undefined && cond(p, READY_CONDITION) === 'True') this.mark(name, 'gate True');
    if (m['Ready False'] !== undefined && cond(p, 'Ready') === 'True') this.mark(name, 'Ready True');
    const hash = p.metadata?.labels?.['controller-revision-hash'];
    if (hash && hash !== this.before.get(name)?.hash) this.mark(name, 'relabelled');
  }

  private slice(s: V1EndpointSlice): void {
    for (const e of s.endpoints ?? []) {
      const pod = e.targetRef?.name ?? '';
      const m = this.pods.get(pod);
      if (!m) continue;
      if (e.conditions?.ready === false) this.mark(pod, 'endpoint not ready');
      if (e.conditions?.ready !== false && m['endpoint not ready'] !== undefined) this.mark(pod, 'endpoint ready');
    }
  }

  private ipr(r: InPlaceRollout): void {
    const phase = r.status?.phase;
    // Each phase the rollout enters after the template change (the phase it was in before is not one).
    if (this.running && phase && phase !== this.phase) this.once(`rollout ${phase}`);
    this.phase = phase;
  }

  private prewarm(pw: ImagePrewarm): void {
    if (!this.running) return;
    this.once('pre-warm created');
    const st = pw.status;
    if (st && st.observedGeneration === pw.metadata.generation && (st.desired ?? 0) > 0 && st.succeeded === st.desired) this.once('pre-warm done (status)');
  }

  /** Every pod's steps (s after the template change) beside events on the epoch clock, e.g. the clients' failures. */
  detail(events: { at: number; text: string }[], indent = '    '): string[] {
    const rows: { at: number; text: string }[] = events.map((e) => ({ at: e.at - this.epoch0, text: e.text }));
    for (const [pod, m] of this.pods) for (const step of POD_STEPS) if (m[step] !== undefined) rows.push({ at: m[step]!, text: `${pod} ${step}` });
    return [`${indent}pods' steps and the clients' failures (s after the template change):`, ...rows.sort((a, b) => a.at - b.at).map((r) => `${indent}  ${(r.at / 1000).toFixed(2).padStart(7)}  ${r.text}`)];
  }

  /** The summary: rollout-level steps, then the median per-pod steps, then the gaps between pods. */
  summary(indent = '    '): string[] {
    const out: string[] = [];
    const f = (ms: number | undefined) => (ms === undefined ? '   -  ' : `${(ms / 1000).toFixed(2).padStart(6)} s`);
    out.push(`${indent}timeline (s after the template change):`);
    for (const [what, ms] of Object.entries(this.rollout).sort((a, b) => a[1] - b[1])) out.push(`${indent}  ${what.padEnd(34)} ${f(ms)}`);
    const pods = [...this.pods.entries()].filter(([, m]) => m.created !== undefined).sort((a, b) => a[1].created! - b[1].created!);
    out.push(`${indent}per pod, median over ${pods.length} (s after its ContainerRestart was created; +s since the step above):`);
    let prev = 0;
    for (const step of POD_STEPS) {
      const xs = pods.map(([, m]) => m[step]).filter((x): x is number => x !== undefined).map((x, i) => x - (pods.filter(([, m]) => m[step] !== undefined)[i][1].created ?? 0));
      const med = median(xs);
      if (med === undefined) continue;
      out.push(`${indent}  ${step.padEnd(24)} ${f(med)}  +${((med - prev) / 1000).toFixed(2)}${xs.length < pods.length ? `  (in ${xs.length} of ${pods.length})` : ''}`);
      prev = med;
    }
    // The kubelet's part after the probe, pod by pod (a median hides whether it is every pod's or some pods').
    const after = (from: PodStep, to: PodStep) => pods.map(([, m]) => (m[from] !== undefined && m[to] !== undefined ? ((m[to]! - m[from]!) / 1000).toFixed(2) : '-')).join(', ');
    out.push(`${indent}per pod, container ready to Ready True (s): ${after('container ready', 'Ready True')}; gate True to Ready True: ${after('gate True', 'Ready True')}`);
    const gaps = (from: PodStep) => median(pods.slice(1).map(([, m], i) => m.created! - (pods[i][1][from] ?? NaN)).filter((x) => !Number.isNaN(x)));
    out.push(`${indent}next pod's ContainerRestart created, after the previous pod's: Ready True ${f(gaps('Ready True'))}, Succeeded ${f(gaps('Succeeded'))}, relabelled ${f(gaps('relabelled'))}`);
    const tr = [...this.traffic.values()][0];
    if (tr) out.push(`${indent}first pod's traffic note: ${tr}`);
    return out;
  }
}
