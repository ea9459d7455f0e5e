// The agent's view of a node, in its own terms. Wire types (CRI, Docker JSON) are converted to these at the
// edge of each adapter, in that adapter's convert.ts.

/** The namespace containerd's CRI plugin keeps its images, containers and sandboxes in by default. */
export const CRI_NAMESPACE = 'k8s.io';

/** Which kind of runtime an adapter drives. */
export type RuntimeKind = 'cri' | 'docker';

/** A container's lifecycle state, common to CRI and Docker. */
export type ContainerState = 'created' | 'running' | 'exited' | 'unknown';

/** A pod: a sandbox that owns the network namespace (and so the IP) plus the containers that joined it. */
export interface Pod {
  /** Sandbox id (CRI pod sandbox id; Docker: the sandbox container's id). */
  id: string;
  /** `namespace/name` (Kubernetes labels when present; Docker: `docker/<sandbox container name>`). */
  name: string;
  namespace: string;
  uid: string;
  /** CRI metadata attempt of the sandbox; 0 on Docker. */
  attempt: number;
  state: 'ready' | 'notready';
  /** Primary IP of the pod's network namespace, '' when it has none. */
  ip: string;
  createdAt: Date;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** A mount of a host path or volume into a container. */
export interface Mount {
  /** Absolute host path (bind) or volume name (Docker named/anonymous volume). */
  source: string;
  containerPath: string;
  readonly: boolean;
  type: 'bind' | 'volume' | 'tmpfs' | 'other';
}

/** A container as the runtime reports it. */
export interface Container {
  id: string;
  /** Name in its pod: CRI metadata name; Docker: `io.kubernetes.container.name` label or the container name. */
  name: string;
  /** Sandbox id of the pod it belongs to. */
  podId: string;
  /** CRI metadata attempt; on Docker 0. */
  attempt: number;
  /** The runtime's own name of the container (Docker container name without '/'); '' on CRI. */
  runtimeName?: string;
  /** The image as it was asked for (reference). */
  image: string;
  /** The resolved image id or digest the container runs. */
  imageId: string;
  state: ContainerState;
  createdAt: Date;
  startedAt?: Date;
  finishedAt?: Date;
  exitCode?: number;
  reason?: string;
  /** Times the runtime restarted it by its restart policy (Docker); absent when none or not tracked (CRI). */
  restartCount?: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: Mount[];
}

/**
 * Everything needed to create a container again. The common fields are for reading and for the changes the
 * agent makes (image, attempt, name); `native` is the runtime's own creation config, carried untouched and read
 * only by the adapter that produced it, so nothing the agent does not model is lost on recreation.
 */
export interface ContainerSpec {
  name: string;
  image: string;
  command: string[];
  args: string[];
  env: { key: string; value: string }[];
  workingDir: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: Mount[];
  /** CRI metadata attempt; ignored on Docker. */
  attempt: number;
  /** The runtime's own creation config (CRI ContainerConfig + sandbox config; Docker inspect). */
  native: unknown;
}

/** A container together with the config it was created from. */
export interface ContainerDetail extends Container {
  spec: ContainerSpec;
}

/** An image in the runtime's store. */
export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  pinned: boolean;
}

/** Who asked for a pin that should last only while they want it (an ImagePrewarm: its uid and name). */
export interface PinOwner {
  uid: string;
  name: string;
}

/** An image the runtime keeps pinned, with the owners of its pin. */
export interface PinnedImage {
  /** Image id (`sha256:...`), '' when the runtime did not say. */
  id: string;
  /** The runtime's names of it (tags, repo digests, id). */
  names: string[];
  /** Bytes, as the runtime reports the image's size (0 when unknown). */
  size: number;
  /** Owner uid to owner name. */
  owners: Record<string, string>;
  /** It was pinned before its first owner (by hand): its pin stays when the last owner lets go. */
  kept: boolean;
}

/** Credentials for one registry. Never logged. */
export interface RegistryAuth {
  username?: string;
  password?: string;
  /** base64(username:password), as in a Docker config.json. */
  auth?: string;
  identityToken?: string;
  registryToken?: string;
  serverAddress?: string;
}

/** Byte progress of one layer (or content blob) during a pull. */
export interface LayerProgress {
  id: string;
  /** 'waiting' | 'downloading' | 'extracting' | 'done' and similar, runtime-reported. */
  status: string;
  current: number;
  total: number;
}

/** A snapshot of a pull's progress, sent whenever it changes. */
export interface PullProgress {
  layers: LayerProgress[];
  /** Sum of current bytes over layers. */
  bytesDone: number;
  /** Sum of known totals over layers (0 when unknown). */
  bytesTotal: number;
  /** True while layers are being unpacked: no new bytes are expected then. */
  extracting: boolean;
}

/** Options of a pull. */
export interface PullOptions {
  auth?: RegistryAuth;
  signal?: AbortSignal;
  onProgress?: (p: PullProgress) => void;
  /** Overall deadline of this one pull call, ms. */
  timeoutMs?: number;
}

/** Result of a pull: the image as stored. */
export interface PulledImage {
  /** Image id (config digest). */
  id: string;
  /** Repo digest of what was pulled (`name@sha256:...`), '' when the runtime does not tell. */
  digest: string;
}

/** A container lifecycle event. */
export interface RuntimeEvent {
  type: 'created' | 'started' | 'stopped' | 'deleted';
  containerId: string;
  podId: string;
  at: Date;
}

/** Result of running a command in a container. */
export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Free and used bytes of the filesystem that holds images. */
export interface ImageFsUsage {
  mountpoint: string;
  usedBytes: number;
  /** Free bytes on that filesystem, computed by the agent when the runtime does not say. */
  availableBytes: number;
}

/** Version of the runtime behind an adapter. */
export interface RuntimeVersion {
  kind: RuntimeKind;
  name: string;
  version: string;
  apiVersion: string;
  endpoint: string;
}
