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
  PinnedImage,
  PinOwner,
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
  /**
   * Only what the runtime's list call itself says, where more costs a call per container (CRI): no start or
   * finish times, exit codes, reasons or mounts, and the image as named when the container was created.
   */
  brief?: boolean;
}

/**
 * Where runtimes differ in what they can do. The engine and the pull service read these, never the runtime's
 * kind (which is for display and metrics).
 */
export interface RuntimeCapabilities {
  /**
   * A stopped container can be started again (Docker). Where it cannot (CRI: a container runs once), a
   * rollback creates a new instance from the old container's config.
   */
  readonly restartsStopped: boolean;
  /**
   * pullImage reports byte progress through onProgress as it goes (Docker's pull stream). Where it does not
   * (CRI's PullImage is one unary call), a progress source watching the runtime's store may stand in.
   */
  readonly pullReportsProgress: boolean;
  /**
   * The longest container name a request may give: a DNS label (63) on CRI, where the name is the pod spec's;
   * a Docker name or the io.kubernetes.container.name label (253) on Docker.
   */
  readonly maxContainerName: number;
}

/**
 * A replacement and the container it replaces, for the runtimes where a container's name is a unique key
 * (Docker): the replacement is created under replacementName(name, tag) and takes `name` once the old one is
 * stopped.
 */
export interface NameSwap {
  oldId: string;
  /** The replacement's id; '' when none was created. */
  newId: string;
  /** The old container's runtime name before the operation; '' where names are not unique keys. */
  name: string;
  /** Tells the names of one operation from another's. */
  tag: string;
}

/** A node's container runtime. Every method throws AgentError on failure. */
export interface Runtime {
  /** Which adapter this is; for display and metrics only (behaviour follows `capabilities`). */
  readonly kind: RuntimeKind;
  readonly capabilities: RuntimeCapabilities;
  /** The runtime's version; throws Unavailable when it cannot be reached. */
  version(): Promise<RuntimeVersion>;
  /**
   * Lists pods (ready and not ready). With `withIp: false` an adapter may leave `ip` empty when reading it
   * costs a call per pod (CRI); getPod always fills it. With `kubeletPod` (NAMESPACE/NAME), an adapter that can
   * ask for them alone (CRI: by the labels the kubelet puts on its sandboxes) lists only the sandboxes the kubelet
   * made for that pod; the others list every pod.
   */
  listPods(opts?: { withIp?: boolean; kubeletPod?: string }): Promise<Pod[]>;
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
   * changed), under `name` where names are unique keys (a replacementName). Returns the new container id.
   */
  createContainer(podId: string, spec: ContainerSpec, name?: string): Promise<string>;
  /** Starts a created container. */
  startContainer(containerId: string): Promise<void>;
  /** Stops a container, killing it after graceSeconds. Idempotent: stopping a stopped container succeeds. */
  stopContainer(containerId: string, graceSeconds: number): Promise<void>;
  /** Removes a container. Idempotent: removing a missing container succeeds. */
  removeContainer(containerId: string): Promise<void>;
  /**
   * The name to create a replacement of the container named `name` under while that one still holds it;
   * undefined where names are not unique keys (CRI), or when name is ''.
   */
  replacementName(name: string, tag: string): string | undefined;
  /**
   * The old container steps aside and the replacement takes its name; nothing where names are not unique
   * keys. Safe to run again; a container that is gone is skipped.
   */
  swapNames(swap: NameSwap): Promise<void>;
  /** Puts the names back as they were before swapNames. Safe to run again; a container that is gone is skipped. */
  restoreNames(swap: NameSwap): Promise<void>;
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
  /** Pins an image on behalf of owner; whether the runtime reports it pinned. NotFound when absent. */
  pinFor?(ref: string, owner: PinOwner): Promise<boolean>;
  /** Takes owner's pin off; the image stays pinned while another owner holds it, or when it was pinned before them. */
  unpinFor?(ref: string, ownerUid: string): Promise<void>;
  /** Every pinned image, with its owners and size. */
  pinnedImages?(): Promise<PinnedImage[]>;
  /** A stream of container events until the signal aborts. Polls where the runtime has no event stream. */
  events(signal: AbortSignal): AsyncIterable<RuntimeEvent>;
  /** Releases connections. */
  close(): void;
}
