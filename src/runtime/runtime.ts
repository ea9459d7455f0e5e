// The one interface the engine uses to drive a node's container runtime. Two adapters implement it:
// runtime/cri (CRI gRPC: containerd, CRI-O) and runtime/docker (Docker Engine API).
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
  RuntimeKind,
  RuntimeVersion,
} from './types.js';

/** Filter for listing containers. */
export interface ContainerFilter {
  podId?: string;
  /** Only running containers (default: every state). */
  runningOnly?: boolean;
}

/** A node's container runtime. Every method throws AgentError on failure. */
export interface Runtime {
  readonly kind: RuntimeKind;
  /** The runtime's version; throws Unavailable when it cannot be reached. */
  version(): Promise<RuntimeVersion>;
  /**
   * Lists pods (ready and not ready). With `withIp: false` an adapter may leave `ip` empty when reading it
   * costs a call per pod (CRI); getPod always fills it.
   */
  listPods(opts?: { withIp?: boolean }): Promise<Pod[]>;
  /** One pod by sandbox id; NotFound when there is none. */
  getPod(podId: string): Promise<Pod>;
  /** Lists containers. */
  listContainers(filter?: ContainerFilter): Promise<Container[]>;
  /** Just the state of a container, as cheaply as the runtime allows; NotFound when there is none. */
  containerState(containerId: string): Promise<ContainerState>;
  /** A container with the config it was created from; NotFound when there is none. */
  inspectContainer(containerId: string): Promise<ContainerDetail>;
  /**
   * Creates a container in an existing pod from a spec (typically an inspected one, with image or attempt
   * changed). On Docker, `name` is the container name to create under. Returns the new container id.
   */
  createContainer(podId: string, spec: ContainerSpec, name?: string): Promise<string>;
  /** Starts a created container. */
  startContainer(containerId: string): Promise<void>;
  /** Stops a container, killing it after graceSeconds. Idempotent: stopping a stopped container succeeds. */
  stopContainer(containerId: string, graceSeconds: number): Promise<void>;
  /** Removes a container. Idempotent: removing a missing container succeeds. */
  removeContainer(containerId: string): Promise<void>;
  /** Renames a container (Docker); a no-op where names are not unique keys (CRI). */
  renameContainer(containerId: string, newName: string): Promise<void>;
  /** Runs a command in a running container and waits for it, up to timeoutSeconds (0: no limit). */
  exec(containerId: string, cmd: string[], timeoutSeconds: number): Promise<ExecResult>;
  /** Pulls an image into the runtime's own store. */
  pullImage(ref: string, opts?: PullOptions): Promise<PulledImage>;
  /** An image by reference or id; undefined when not present. */
  inspectImage(ref: string): Promise<Image | undefined>;
  /** All images in the runtime's store. */
  listImages(): Promise<Image[]>;
  /** Usage of the filesystem that holds images. */
  imageFsUsage(): Promise<ImageFsUsage>;
  /** Marks or unmarks an image as pinned (protected from image GC) where the runtime supports it. */
  pinImage?(ref: string, pinned: boolean): Promise<boolean>;
  /** A stream of container events until the signal aborts. Polls where the runtime has no event stream. */
  events(signal: AbortSignal): AsyncIterable<RuntimeEvent>;
  /** Releases connections. */
  close(): void;
}
