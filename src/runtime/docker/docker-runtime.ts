// The Runtime interface over the Docker Engine API (dockerode). Pods are sandbox containers plus the containers
// that joined their network namespace (see pods.ts); recreation goes through create-container.ts and create-options.ts.
import './without-ssh.js';
import Dockerode from 'dockerode';
import { AgentError, asAgentError } from '../../errors.js';
import type { ContainerFilter, NameSwap, Runtime, RuntimeCapabilities } from '../runtime.js';
import type {
  Container,
  ContainerDetail,
  ContainerSpec,
  ContainerState,
  ExecResult,
  Image,
  ImageFsUsage,
  Pod,
  PulledImage,
  PullOptions,
  RuntimeEvent,
  RuntimeVersion,
} from '../types.js';
import { MIN_ID_PREFIX } from '../../id-prefix.js';
import { containerFromInspect, containerState, dockerName, imageFromDocker } from './convert.js';
import { createContainer, type CreateAccess } from './create-container.js';
import type { DockerEngine } from './create-options.js';
import { dockerodeOptions } from './endpoint.js';
import { dockerError, dockerStatus } from './errors.js';
import { dockerEvents, eventPodIds } from './events.js';
import { execInContainer } from './exec.js';
import { imageFsUsage } from './image-fs.js';
import { replacementName, restoreNames, swapNames, type Renamer } from './name-swap.js';
import { groupPods, joinedContainer, type PodGroups } from './pods.js';
import { isPodman, podmanPodMembers, withNetworkModes } from './podman-compat.js';
import { dockerPullError } from './pull-errors.js';
import { pullImage } from './pull.js';

/** Longest `container:` chain followed when resolving a container's pod. */
const maxJoinHops = 8;

/** A Runtime that drives one dockerd. */
export class DockerRuntime implements Runtime {
  readonly kind = 'docker' as const;
  /** dockerd restarts a stopped container, and streams a pull's progress. */
  readonly capabilities: RuntimeCapabilities = { restartsStopped: true, pullReportsProgress: true, maxContainerName: 253 };
  private readonly docker: Dockerode;
  /** Which engine serves the API, learnt from its first version answer. */
  private engineKind?: Promise<DockerEngine>;

  /** Connects lazily to endpoint: `unix:///path/docker.sock`, a bare socket path, or `tcp://host:port`. */
  constructor(readonly endpoint: string) {
    this.docker = new Dockerode(dockerodeOptions(endpoint));
  }

  private fail(err: unknown, subject: string): AgentError {
    return dockerError(err, subject, this.endpoint);
  }

  async version(): Promise<RuntimeVersion> {
    try {
      const v = await this.docker.version();
      const engine = isPodman(v) ? 'podman' : 'docker';
      return { kind: 'docker', name: engine, version: v.Version, apiVersion: v.ApiVersion, endpoint: this.endpoint };
    } catch (err) {
      throw this.fail(err, 'version');
    }
  }

  /** dockerd or Podman: they differ in what inspect tells of networks and in pods of Podman's own. */
  private engine(): Promise<DockerEngine> {
    if (!this.engineKind) {
      const kind = this.version().then((v) => (v.name === 'podman' ? 'podman' : 'dockerd') as DockerEngine);
      this.engineKind = kind;
      kind.catch(() => {
        if (this.engineKind === kind) this.engineKind = undefined; // asked again next time
      });
    }
    return this.engineKind;
  }

  private async listAll(): Promise<Dockerode.ContainerInfo[]> {
    try {
      return await withNetworkModes(this.docker, await this.docker.listContainers({ all: true }));
    } catch (err) {
      throw this.fail(err, 'container list');
    }
  }

  /** Every container grouped into pods; on Podman its own pods are named as such. */
  private async groups(): Promise<PodGroups> {
    const list = await this.listAll();
    if ((await this.engine()) !== 'podman') return groupPods(list);
    try {
      return groupPods(list, await podmanPodMembers(this.docker));
    } catch (err) {
      throw this.fail(err, 'Podman pod list');
    }
  }

  async listPods(): Promise<Pod[]> {
    return (await this.groups()).pods;
  }

  async getPod(podId: string): Promise<Pod> {
    const pods = (await this.listPods()).filter((p) => p.id === podId || (podId.length >= MIN_ID_PREFIX && p.id.startsWith(podId)));
    if (pods.length !== 1) throw new AgentError('NotFound', `pod "${podId}" not found`);
    return pods[0]!;
  }

  async listContainers(filter: ContainerFilter = {}): Promise<Container[]> {
    // Grouping needs every container (a stopped sandbox still owns its members), so filter afterwards.
    const { containers } = await this.groups();
    return containers.filter(
      (c) => (filter.podId === undefined || c.podId === filter.podId) && (!filter.runningOnly || c.state === 'running'),
    );
  }

  private async inspectRaw(containerId: string): Promise<Dockerode.ContainerInspectInfo> {
    try {
      return await this.docker.getContainer(containerId).inspect();
    } catch (err) {
      throw this.fail(err, `container "${containerId}"`);
    }
  }

  /** Sandbox id of the pod an inspected container belongs to (its own id when it owns its network). */
  private async podIdOf(info: Dockerode.ContainerInspectInfo): Promise<string> {
    let current = info;
    for (let hops = 0; hops < maxJoinHops; hops++) {
      const ref = joinedContainer(current.HostConfig?.NetworkMode);
      if (ref === undefined) return current.Id;
      try {
        current = await this.docker.getContainer(ref).inspect();
      } catch (err) {
        if (dockerStatus(err) === 404) return ref; // the sandbox is gone
        throw this.fail(err, `container "${ref}"`);
      }
    }
    return current.Id;
  }

  /** A container that its restart policy is restarting counts as not running: it has exited at least once. */
  async containerState(containerId: string): Promise<ContainerState> {
    const info = await this.inspectRaw(containerId);
    return info.State.Restarting || info.State.Status === 'restarting' ? 'exited' : containerState(info.State.Status);
  }

  async inspectContainer(containerId: string): Promise<ContainerDetail> {
    const info = await this.inspectRaw(containerId);
    return containerFromInspect(info, await this.podIdOf(info));
  }

  async createContainer(podId: string, spec: ContainerSpec, name?: string): Promise<string> {
    return createContainer(this.createAccess(), podId, spec, name);
  }

  /** What createContainer borrows of this adapter. */
  private createAccess(): CreateAccess {
    return {
      docker: this.docker,
      engine: () => this.engine(),
      fail: (err, subject) => this.fail(err, subject),
      inspectRaw: (id) => this.inspectRaw(id),
      inspectImage: (ref) => this.inspectImage(ref),
      removeContainer: (id) => this.removeContainer(id),
    };
  }

  async startContainer(containerId: string): Promise<void> {
    try {
      await this.docker.getContainer(containerId).start();
    } catch (err) {
      if (dockerStatus(err) === 304) return; // already running
      throw this.fail(err, `container "${containerId}"`);
    }
  }

  async stopContainer(containerId: string, graceSeconds: number): Promise<void> {
    try {
      // Rounded up, like the CRI adapter: a fraction of a second of grace is not an immediate kill.
      await this.docker.getContainer(containerId).stop({ t: Math.max(0, Math.ceil(graceSeconds)) });
    } catch (err) {
      if (dockerStatus(err) === 304) return; // already stopped: the contract says stop is idempotent
      throw this.fail(err, `container "${containerId}"`);
    }
  }

  async removeContainer(containerId: string): Promise<void> {
    try {
      // v: false keeps anonymous volumes, which a replacement container may have taken over by name.
      await this.docker.getContainer(containerId).remove({ force: true, v: false });
    } catch (err) {
      if (dockerStatus(err) === 404) return; // already gone: remove is idempotent
      if (dockerStatus(err) === 409) {
        // "removal already in progress" (e.g. an AutoRemove container that just stopped) counts as removed.
        const gone = await this.docker
          .getContainer(containerId)
          .inspect()
          .then((i) => i.State?.Status === 'removing' || i.State?.Dead === true, (e: unknown) => dockerStatus(e) === 404);
        if (gone) return;
      }
      throw this.fail(err, `container "${containerId}"`);
    }
  }

  /** Gives a container another name. */
  async renameContainer(containerId: string, newName: string): Promise<void> {
    try {
      await this.docker.getContainer(containerId).rename({ name: newName });
    } catch (err) {
      const status = dockerStatus(err);
      throw this.fail(err, status === 404 ? `container "${containerId}"` : `rename of container "${containerId}" to "${newName}"`);
    }
  }

  replacementName(name: string, tag: string): string | undefined {
    return replacementName(name, tag);
  }

  swapNames(swap: NameSwap): Promise<void> {
    return swapNames(this.renamer, swap);
  }

  restoreNames(swap: NameSwap): Promise<void> {
    return restoreNames(this.renamer, swap);
  }

  private readonly renamer: Renamer = {
    nameOf: async (id) => {
      try {
        return dockerName((await this.docker.getContainer(id).inspect()).Name);
      } catch (err) {
        if (dockerStatus(err) === 404) return undefined;
        throw this.fail(err, `container "${id}"`);
      }
    },
    rename: (id, name) => this.renameContainer(id, name),
  };

  exec(containerId: string, cmd: string[], timeoutSeconds: number): Promise<ExecResult> {
    return execInContainer(this.docker, this.endpoint, containerId, cmd, timeoutSeconds);
  }

  /** A failure's kind says what dockerd's text meant: a missing image, refused credentials, a full disk. */
  pullImage(ref: string, opts?: PullOptions): Promise<PulledImage> {
    return pullImage(this.docker, this.endpoint, ref, opts).catch((err: unknown) => {
      throw dockerPullError(asAgentError(err));
    });
  }

  async inspectImage(ref: string): Promise<Image | undefined> {
    try {
      return imageFromDocker(await this.docker.getImage(ref).inspect());
    } catch (err) {
      if (dockerStatus(err) === 404) return undefined;
      throw this.fail(err, `image "${ref}"`);
    }
  }

  async listImages(): Promise<Image[]> {
    try {
      return (await this.docker.listImages()).map(imageFromDocker);
    } catch (err) {
      throw this.fail(err, 'image list');
    }
  }

  imageFsUsage(): Promise<ImageFsUsage> {
    return imageFsUsage(this.docker, (err, subject) => this.fail(err, subject));
  }

  events(signal: AbortSignal): AsyncIterable<RuntimeEvent> {
    const since = Date.now() / 1000; // events from the moment of the call, even if iteration starts later
    const podIdOf = eventPodIds(
      () => this.listAll().catch(() => []),
      async (id) => this.podIdOf(await this.docker.getContainer(id).inspect()),
    );
    return dockerEvents({ docker: this.docker, podIdOf }, signal, since);
  }

  close(): void {
    // dockerode holds no connection between requests.
  }
}
