// What a stock rolling update (rows (b), (b'), (d) of bench:rollout) did to each pod, seen from outside, to set
// beside the clients' failed requests: one watch each on the namespace's pods and EndpointSlices notes when each
// step became visible (the bench's clock, s after the template change):
//
//   old pod:  deletion asked -> endpoint not ready (slice) -> container exited -> endpoint gone from the slices
//   new pod:  created -> container running -> Ready True -> endpoint ready (slice)
//
// A request refused (ECONNREFUSED) between an old pod's "container exited" and "endpoint gone", say, was sent to
// a stopped server that kube-proxy still listed: the drain took longer than the preStop sleep.
import { Watch, type KubeConfig, type KubernetesObject, type V1EndpointSlice, type V1Pod } from '@kubernetes/client-node';

/** Records one run's steps per pod instance; start() before the template change, stop() after the run. */
export class StockTimeline {
  private epoch0 = 0;
  private running = false;
  private readonly aborts: AbortController[] = [];
  /** Per pod uid: its name, address, whether it was there before the run, and its steps (ms after zero()). */
  private readonly pods = new Map<string, { name: string; ip?: string; old: boolean; steps: Map<string, number> }>();
  /** Addresses listed in the slices now, per slice. */
  private readonly listed = new Map<string, Set<string>>();

  constructor(
    private readonly kc: KubeConfig,
    private readonly ns: string,
    /** The container whose image changes. */
    private readonly container: string,
  ) {}

  /** Watches; `pods` are the pods as the run began (the old ones). */
  async start(pods: V1Pod[]): Promise<void> {
    for (const p of pods) this.pods.set(p.metadata?.uid ?? '', { name: p.metadata?.name ?? '', ip: p.status?.podIP, old: true, steps: new Map() });
    const w = new Watch(this.kc);
    const on = async <T>(path: string, handle: (type: string, o: T) => void) => {
      this.aborts.push(await w.watch(path, { resourceVersion: '0' }, (type, o: KubernetesObject) => handle(type, o as T), () => undefined));
    };
    await Promise.all([
      on<V1Pod>(`/api/v1/namespaces/${this.ns}/pods`, (type, p) => this.pod(type, p)),
      on<V1EndpointSlice>(`/apis/discovery.k8s.io/v1/namespaces/${this.ns}/endpointslices`, (type, s) => this.slice(type, s)),
    ]);
  }

  /** The instant the run's clock starts (the template change). */
  zero(): void {
    this.epoch0 = Date.now();
    this.running = true;
  }

  stop(): void {
    for (const a of this.aborts) a.abort();
  }

  private mark(uid: string, step: string): void {
    const p = this.pods.get(uid);
    if (!this.running || !p || p.steps.has(step)) return;
    p.steps.set(step, Date.now() - this.epoch0);
  }

  private pod(type: string, p: V1Pod): void {
    const uid = p.metadata?.uid ?? '';
    if (!this.pods.has(uid)) {
      if (!this.running) return;
      this.pods.set(uid, { name: p.metadata?.name ?? '', old: false, steps: new Map() });
      this.mark(uid, 'created');
    }
    const rec = this.pods.get(uid)!;
    rec.ip ??= p.status?.podIP;
    if (p.metadata?.deletionTimestamp) this.mark(uid, 'deletion asked');
    if (type === 'DELETED') this.mark(uid, 'pod gone');
    const cs = p.status?.containerStatuses?.find((c) => c.name === this.container);
    if (rec.old && cs?.state?.terminated) this.mark(uid, 'container exited');
    if (!rec.old && cs?.state?.running) this.mark(uid, 'container running');
    if (!rec.old && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) this.mark(uid, 'Ready True');
  }

  private slice(type: string, s: V1EndpointSlice): void {
    const key = s.metadata?.name ?? '';
    const now = new Set<string>();
    if (type !== 'DELETED') {
      for (const e of s.endpoints ?? []) {
        const uid = e.targetRef?.uid ?? '';
        for (const a of e.addresses) now.add(`${uid} ${a}`);
        if (e.conditions?.ready === false) this.mark(uid, 'endpoint not ready');
        else if (this.pods.get(uid)?.old === false) this.mark(uid, 'endpoint ready');
      }
    }
    for (const gone of [...(this.listed.get(key) ?? [])].filter((x) => !now.has(x))) {
      const uid = gone.split(' ')[0];
      if (![...this.listed.entries()].some(([k, set]) => k !== key && set.has(gone))) this.mark(uid, 'endpoint gone');
    }
    this.listed.set(key, now);
  }

  /** Every pod's steps (s after the template change) beside events on the epoch clock, e.g. the clients' failures. */
  detail(events: { at: number; text: string }[], indent = '    '): string[] {
    const rows: { at: number; text: string }[] = events.map((e) => ({ at: e.at - this.epoch0, text: e.text }));
    for (const p of this.pods.values()) for (const [step, at] of p.steps) rows.push({ at, text: `${p.name} (${p.old ? 'old' : 'new'}, ${p.ip ?? '?'}) ${step}` });
    return [`${indent}pods' steps and the clients' failures (s after the template change):`, ...rows.sort((a, b) => a.at - b.at).map((r) => `${indent}  ${(r.at / 1000).toFixed(2).padStart(7)}  ${r.text}`)];
  }

  /**
   * Medians over the pods, s: per old pod, from its deletion asked to its endpoint not ready, its container exited,
   * its endpoint gone and the pod gone; per new pod, from created to its container running and to Ready True; and
   * from a new pod's Ready True to the next old pod's deletion asked.
   */
  summary(indent = '    '): string[] {
    const med = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    };
    const olds = [...this.pods.values()].filter((p) => p.old && p.steps.has('deletion asked'));
    const after = (step: string) => olds.filter((p) => p.steps.has(step)).map((p) => (p.steps.get(step)! - p.steps.get('deletion asked')!) / 1000);
    const f = (xs: number[]) => `${med(xs).toFixed(2)} s (${xs.map((x) => x.toFixed(2)).join(', ')})`;
    const news = [...this.pods.values()].filter((p) => !p.old && p.steps.has('created'));
    const since = (step: string) => news.filter((p) => p.steps.has(step)).map((p) => (p.steps.get(step)! - p.steps.get('created')!) / 1000);
    const readies = news.map((p) => p.steps.get('Ready True')).filter((x): x is number => x !== undefined);
    const deletions = olds.map((p) => p.steps.get('deletion asked')!);
    const next = readies.map((r) => deletions.filter((d) => d >= r).sort((a, b) => a - b)[0]).map((d, i) => (d === undefined ? NaN : (d - readies[i]) / 1000)).filter((x) => !Number.isNaN(x));
    return [
      `${indent}old pods, after the deletion was asked: endpoint not ready ${f(after('endpoint not ready'))}; container exited ${f(after('container exited'))}; endpoint gone ${f(after('endpoint gone'))}; pod gone ${f(after('pod gone'))}`,
      `${indent}new pods, after created: container running ${f(since('container running'))}; Ready True ${f(since('Ready True'))}; the next deletion after a new pod's Ready True ${f(next)}`,
    ];
  }
}
