// A SIMULATED container runtime for the scale harness only (issue 42): it lives in bench/scale/, never in src/,
// and no test uses it (the project's tests run against real containerd and dockerd). On a KWOK node there is no
// runtime: kwok writes the pods' statuses itself. This Runtime shows the agent's node side what a CRI runtime on
// that node would show, read from the node's own pod watch (NodePods, the agent's watch of spec.nodeName):
//   - a pod sandbox per pod (id = the pod's uid, name NAMESPACE/NAME, the kubelet's labels);
//   - a container per container status, id = its containerID without `kwok://`, state from the status; the instance
//     before it (lastState.terminated) as an exited container, as the kubelet keeps one dead instance;
//   - images: those the node's pods run, and those pulled here; a pull takes `pullMs` and moves no bytes.
// Stops, creates, execs and renames are refused: the harness runs image changes of kubelet-managed pods only, and
// there the kubelet (kwok's Stage bench/scale/stages/pod-image-change.yaml) recreates the container, not the agent.
import { createHash } from 'node:crypto';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { AgentError } from '../../src/errors.js';
import type { Clock } from '../../src/clock.js';
import type { ContainerFilter, Runtime, RuntimeCapabilities } from '../../src/runtime/runtime.js';
import type { Container, ContainerDetail, ContainerState, ExecResult, Image, ImageFsUsage, Pod, PulledImage, PullOptions, RuntimeEvent, RuntimeVersion } from '../../src/runtime/types.js';

/** What the simulated runtime reads: the node's pods as its watch last saw them. */
export interface SimPods {
  list(): V1Pod[];
}

/** The image id kwok's Stages give a reference (sha256 of the reference), so that both sides agree. */
export function simImageId(ref: string): string {
  return `sha256:${createHash('sha256').update(ref).digest('hex')}`;
}

function bare(id: string | undefined): string {
  if (!id) return '';
  const i = id.indexOf('://');
  return i >= 0 ? id.slice(i + 3) : id;
}

function stateOf(s: V1ContainerStatus): ContainerState {
  if (s.state?.running) return 'running';
  if (s.state?.terminated) return 'exited';
  return s.state?.waiting ? 'created' : 'unknown';
}

const refused = (what: string) => new AgentError('FailedPrecondition', `${what}: the scale harness's simulated runtime (bench/scale/sim-runtime.ts) does not do this`);

/** One KWOK node's runtime, simulated from its pods' statuses. */
export class SimRuntime implements Runtime {
  readonly kind = 'cri' as const;
  readonly capabilities: RuntimeCapabilities = { restartsStopped: false, pullReportsProgress: false, maxContainerName: 63 };
  private readonly pulled = new Set<string>();
  /** Pulls made here, and pod lists asked for (a CRI ListPodSandbox each on a real node); the harness reports them. */
  pulls = 0;
  podLists = 0;

  constructor(
    private readonly node: string,
    private readonly pods: SimPods,
    private readonly clock: Clock,
    private readonly pullMs: number,
  ) {}

  version(): Promise<RuntimeVersion> {
    return Promise.resolve({ kind: 'cri', name: 'simulated (bench/scale)', version: '0', apiVersion: 'v1', endpoint: `sim://${this.node}` });
  }

  private sandbox(p: V1Pod): Pod {
    const m = p.metadata ?? {};
    return {
      id: m.uid ?? '',
      name: `${m.namespace}/${m.name}`,
      namespace: m.namespace ?? '',
      uid: m.uid ?? '',
      attempt: 0,
      state: 'ready',
      ip: p.status?.podIP ?? '',
      createdAt: m.creationTimestamp ? new Date(m.creationTimestamp) : new Date(0),
      labels: { 'io.kubernetes.pod.uid': m.uid ?? '', 'io.kubernetes.pod.name': m.name ?? '', 'io.kubernetes.pod.namespace': m.namespace ?? '' },
      annotations: {},
    };
  }

  private containersOf(p: V1Pod): Container[] {
    const m = p.metadata ?? {};
    const out: Container[] = [];
    const labels = (name: string) => ({ 'io.kubernetes.pod.uid': m.uid ?? '', 'io.kubernetes.pod.name': m.name ?? '', 'io.kubernetes.pod.namespace': m.namespace ?? '', 'io.kubernetes.container.name': name });
    for (const s of p.status?.containerStatuses ?? []) {
      const id = bare(s.containerID);
      if (!id) continue;
      const started = s.state?.running?.startedAt ?? s.state?.terminated?.startedAt;
      out.push({
        id,
        name: s.name,
        podId: m.uid ?? '',
        attempt: s.restartCount,
        image: s.image,
        imageId: s.imageID || simImageId(s.image),
        state: stateOf(s),
        createdAt: started ? new Date(started) : new Date(0),
        ...(started ? { startedAt: new Date(started) } : {}),
        labels: labels(s.name),
        annotations: {},
        mounts: [],
      });
      const last = s.lastState?.terminated;
      const lastId = bare(last?.containerID);
      if (last && lastId) {
        out.push({
          id: lastId,
          name: s.name,
          podId: m.uid ?? '',
          attempt: Math.max(0, s.restartCount - 1),
          image: s.image,
          imageId: '',
          state: 'exited',
          createdAt: new Date(0),
          ...(last.finishedAt ? { finishedAt: new Date(last.finishedAt) } : {}),
          exitCode: last.exitCode,
          labels: labels(s.name),
          annotations: {},
          mounts: [],
        });
      }
    }
    return out;
  }

  listPods(opts?: { withIp?: boolean; kubeletPod?: string }): Promise<Pod[]> {
    this.podLists++;
    const all = this.pods.list().map((p) => this.sandbox(p));
    return Promise.resolve(opts?.kubeletPod ? all.filter((p) => p.name === opts.kubeletPod) : all);
  }

  getPod(podId: string): Promise<Pod> {
    const p = this.pods.list().find((x) => x.metadata?.uid === podId);
    return p ? Promise.resolve(this.sandbox(p)) : Promise.reject(new AgentError('NotFound', `pod sandbox ${podId} not found`));
  }

  listContainers(filter?: ContainerFilter): Promise<Container[]> {
    const pods = filter?.podId ? this.pods.list().filter((p) => p.metadata?.uid === filter.podId) : this.pods.list();
    const all = pods.flatMap((p) => this.containersOf(p));
    return Promise.resolve(filter?.runningOnly ? all.filter((c) => c.state === 'running') : all);
  }

  private find(id: string): Container {
    for (const p of this.pods.list()) {
      const c = this.containersOf(p).find((x) => x.id === id);
      if (c) return c;
    }
    throw new AgentError('NotFound', `container ${id} not found`);
  }

  containerState(containerId: string): Promise<ContainerState> {
    return Promise.resolve().then(() => this.find(containerId).state);
  }

  inspectContainer(containerId: string): Promise<ContainerDetail> {
    return Promise.resolve().then(() => {
      const c = this.find(containerId);
      return { ...c, spec: { name: c.name, image: c.image, command: [], args: [], env: [], workingDir: '', labels: c.labels, annotations: {}, mounts: [], attempt: c.attempt, native: undefined } };
    });
  }

  createContainer(): Promise<string> {
    return Promise.reject(refused('create a container'));
  }
  startContainer(): Promise<void> {
    return Promise.reject(refused('start a container'));
  }
  stopContainer(): Promise<void> {
    return Promise.reject(refused('stop a container'));
  }
  removeContainer(): Promise<void> {
    return Promise.resolve();
  }
  replacementName(): string | undefined {
    return undefined;
  }
  swapNames(): Promise<void> {
    return Promise.resolve();
  }
  restoreNames(): Promise<void> {
    return Promise.resolve();
  }
  exec(): Promise<ExecResult> {
    return Promise.reject(refused('exec in a container'));
  }

  async pullImage(ref: string, opts?: PullOptions): Promise<PulledImage> {
    this.pulls++;
    if (this.pullMs > 0) await this.clock.sleep(this.pullMs, opts?.signal);
    this.pulled.add(ref);
    return { id: simImageId(ref), digest: '' };
  }

  private present(): Set<string> {
    const s = new Set(this.pulled);
    for (const p of this.pods.list()) for (const c of p.status?.containerStatuses ?? []) s.add(c.image);
    return s;
  }

  inspectImage(ref: string): Promise<Image | undefined> {
    const has = this.present().has(ref);
    return Promise.resolve(has ? { id: simImageId(ref), repoTags: [ref], repoDigests: [], size: 1, pinned: false } : undefined);
  }

  listImages(): Promise<Image[]> {
    return Promise.resolve([...this.present()].map((ref) => ({ id: simImageId(ref), repoTags: [ref], repoDigests: [], size: 1, pinned: false })));
  }

  imageFsUsage(): Promise<ImageFsUsage> {
    return Promise.resolve({ mountpoint: '/sim', usedBytes: 0, availableBytes: 1e12 });
  }

  events(signal: AbortSignal): AsyncIterable<RuntimeEvent> {
    // No event stream: nothing comes until the caller stops listening.
    const end = new Promise<IteratorResult<RuntimeEvent>>((resolve) => {
      const done = () => resolve({ done: true, value: undefined });
      if (signal.aborted) done();
      else signal.addEventListener('abort', done, { once: true });
    });
    return { [Symbol.asyncIterator]: () => ({ next: () => end }) };
  }

  close(): void {}
}
