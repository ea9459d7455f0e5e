// The Runtime of a CRI endpoint (containerd; CRI-O for everything but recreating from an inspected spec).
import { systemClock, type Clock } from '../../clock.js';
import { AgentError } from '../../errors.js';
import type { ContainerFilter, NameSwap, Runtime, RuntimeCapabilities } from '../runtime.js';
import type {
  Container,
  ContainerDetail,
  ContainerSpec,
  ContainerState,
  ExecResult,
  Image,
  ImageFsUsage,
  PinnedImage,
  PinOwner,
  Pod,
  PulledImage,
  PullOptions,
  RuntimeEvent,
  RuntimeVersion,
} from '../types.js';
import { CriClient } from './client.js';
import { ContainerdClient } from '../containerd/client.js';
import { CRI_NAMESPACE } from '../types.js';
import { toContainerState, toImage } from './convert.js';
import { createContainer } from './create-container.js';
import { criEvents } from './events.js';
import { imageFsUsage } from './image-fs.js';
import { CreatedConfigs, inspectContainer, SandboxConfigCache } from './inspect-container.js';
import { listContainers } from './list-containers.js';
import { getPod, listPods } from './list-pods.js';
import { pinImage } from './pin-image.js';
import { markKept, pinFor, pinnedRecords, unpinFor, type PinOwnerDeps } from './pin-owners.js';
import { pinnedLabelSupport, type PinnedLabelSupport } from './pinned-label-support.js';
import { pullImage } from './pull-image.js';
import { startContainer } from './start-container.js';

/** Options of a CriRuntime. */
export interface CriRuntimeOptions {
  clock?: Clock;
  /** Interval of the ListContainers poll that stands in for the event stream on containerd 1.6, ms. */
  eventPollIntervalMs?: number;
  /** containerd namespace of the CRI plugin's images, for pinning. Default `k8s.io`. */
  containerdNamespace?: string;
  /** How long pinImage waits for CRI to report a label change it picks up, ms. Default 2000. */
  pinSettleMs?: number;
  /** The CRI client to call through (default: one of its own on the endpoint); closed by close(). */
  client?: CriClient;
}

/** Runtime over the CRI gRPC API at one endpoint. */
export class CriRuntime implements Runtime {
  readonly kind = 'cri' as const;
  /** A CRI container runs once; PullImage is one unary call with no progress. */
  readonly capabilities: RuntimeCapabilities = { restartsStopped: false, pullReportsProgress: false, maxContainerName: 63 };
  private readonly client: CriClient;
  private readonly sandboxConfigs = new SandboxConfigCache();
  /** The configs of the containers this runtime object created (inspect then skips the verbose status). */
  private readonly createdConfigs = new CreatedConfigs();
  /** containerd's images service on the same socket; connected on the first pinImage. */
  private containerdImages?: ContainerdClient;
  private pinSupport?: Promise<PinnedLabelSupport>;

  constructor(
    endpoint: string,
    private readonly opts: CriRuntimeOptions = {},
  ) {
    this.client = opts.client ?? new CriClient(endpoint);
  }

  async version(): Promise<RuntimeVersion> {
    const v = await this.client.version();
    return { kind: 'cri', name: v.runtimeName, version: v.runtimeVersion, apiVersion: v.runtimeApiVersion, endpoint: this.client.endpoint };
  }

  listPods(opts: { withIp?: boolean; kubeletPod?: string } = {}): Promise<Pod[]> {
    return listPods(this.client, opts.withIp ?? true, opts.kubeletPod);
  }

  getPod(podId: string): Promise<Pod> {
    return getPod(this.client, podId);
  }

  listContainers(filter?: ContainerFilter): Promise<Container[]> {
    return listContainers(this.client, filter);
  }

  async containerState(containerId: string): Promise<ContainerState> {
    const res = await this.client.containerStatus(containerId, false);
    if (!res.status) throw new AgentError('NotFound', `container "${containerId}" not found`);
    return toContainerState(res.status.state);
  }

  inspectContainer(containerId: string): Promise<ContainerDetail> {
    return inspectContainer(this.client, containerId, this.sandboxConfigs, this.createdConfigs);
  }

  /** The name argument is Docker's; CRI names containers by metadata (spec.name, spec.attempt). */
  createContainer(podId: string, spec: ContainerSpec, _name?: string): Promise<string> {
    return createContainer(this.client, podId, spec, this.createdConfigs);
  }

  /** A start already under way (its caller may have died) is waited for; see start-container.ts. */
  startContainer(containerId: string): Promise<void> {
    return startContainer(this.client, containerId, this.opts.clock ?? systemClock);
  }

  /** By the CRI contract StopContainer on a stopped container succeeds; a missing one is NotFound. */
  stopContainer(containerId: string, graceSeconds: number): Promise<void> {
    return this.client.stopContainer(containerId, Math.max(0, Math.ceil(graceSeconds)));
  }

  /** Removing a missing container succeeds, as the CRI contract asks. */
  async removeContainer(containerId: string): Promise<void> {
    try {
      await this.client.removeContainer(containerId);
    } catch (err) {
      if (!AgentError.is(err, 'NotFound')) throw err;
    }
    this.createdConfigs.delete(containerId);
  }

  /** CRI names are no unique keys: (name, attempt) metadata identifies a container, so no name is needed. */
  replacementName(): undefined {
    return undefined;
  }

  /** Nothing to swap: see replacementName. */
  async swapNames(_swap: NameSwap): Promise<void> {}

  /** Nothing to restore: see replacementName. */
  async restoreNames(_swap: NameSwap): Promise<void> {}

  async exec(containerId: string, cmd: string[], timeoutSeconds: number): Promise<ExecResult> {
    const res = await this.client.execSync(containerId, cmd, Math.max(0, Math.ceil(timeoutSeconds)));
    return { exitCode: res.exitCode, stdout: res.stdout.toString('utf8'), stderr: res.stderr.toString('utf8') };
  }

  /** PullImage is unary: opts.onProgress is not called. */
  pullImage(ref: string, opts?: PullOptions): Promise<PulledImage> {
    return pullImage(this.client, ref, opts);
  }

  async inspectImage(ref: string): Promise<Image | undefined> {
    const { image } = await this.client.imageStatus(ref);
    return image ? toImage(image) : undefined;
  }

  async listImages(): Promise<Image[]> {
    return (await this.client.listImages()).images.map(toImage);
  }

  /**
   * Sets or removes containerd's pinned label (`io.cri-containerd.pinned`) on every name of the image and
   * returns whether CRI now reports it pinned: false on containerd releases whose CRI plugin ignores the label
   * (1.6.20, the sandbox's, among them; see pinned-label-support.ts), which keep the label for a later containerd. NotFound when the
   * image is absent; FailedPrecondition on a CRI runtime without containerd's API (CRI-O).
   */
  async pinImage(ref: string, pinned: boolean): Promise<boolean> {
    // A pin by hand outlives the owners' pins (an ImagePrewarm that also pins it lets go of its own only).
    await markKept(this.pinDeps(), ref, pinned);
    return pinImage(this.pinDeps(), ref, pinned);
  }

  /** pinImage for an owner (an ImagePrewarm): its own label beside the CRI one (see pin-owners.ts). */
  pinFor(ref: string, owner: PinOwner): Promise<boolean> {
    return pinFor(this.pinDeps(), ref, owner);
  }

  /** Takes an owner's pin off; the CRI label goes with the last owner, unless the image was pinned before them. */
  unpinFor(ref: string, ownerUid: string): Promise<void> {
    return unpinFor(this.pinDeps(), ref, ownerUid);
  }

  /** Every image whose records carry the pinned label, with its owners and CRI's size of it. */
  async pinnedImages(): Promise<PinnedImage[]> {
    const pinned = await pinnedRecords(this.pinDeps());
    const images = await this.listImages();
    for (const p of pinned) {
      const img = images.find((i) => i.id === p.id || p.names.some((n) => i.repoTags.includes(n) || i.repoDigests.includes(n)));
      if (img) Object.assign(p, { id: img.id, size: img.size });
    }
    return pinned;
  }

  private pinDeps(): PinOwnerDeps {
    this.containerdImages ??= new ContainerdClient(this.client.endpoint, this.opts.containerdNamespace ?? CRI_NAMESPACE);
    return {
      client: this.client,
      images: this.containerdImages,
      support: () => this.pinnedLabelSupport(),
      clock: this.opts.clock ?? systemClock,
      settleMs: this.opts.pinSettleMs ?? 2000,
      pollMs: 50,
    };
  }

  /** How this runtime treats the pinned label, from its version (asked once); 'unknown' when it cannot say. */
  private async pinnedLabelSupport(): Promise<PinnedLabelSupport> {
    this.pinSupport ??= this.client.version().then((v) => pinnedLabelSupport(v.runtimeName, v.runtimeVersion));
    try {
      return await this.pinSupport;
    } catch {
      this.pinSupport = undefined;
      return 'unknown';
    }
  }

  imageFsUsage(): Promise<ImageFsUsage> {
    return imageFsUsage(this.client);
  }

  events(signal: AbortSignal): AsyncIterable<RuntimeEvent> {
    return criEvents(this.client, signal, { clock: this.opts.clock, pollIntervalMs: this.opts.eventPollIntervalMs });
  }

  close(): void {
    this.containerdImages?.close();
    this.client.close();
  }
}
