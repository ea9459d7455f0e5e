// A thin typed client for CRI runtime.v1 over a unix socket: one method per RPC we use, each with a
// deadline, returning promises and throwing AgentErrors that name what the call was about. The CRI runtime
// adapter, the test pods, the demo and the benchmarks all use it.
import * as grpc from '@grpc/grpc-js';
import type { ProtoGrpcType } from '../../gen/api.js';
import type { ContainerEventResponse__Output } from '../../gen/runtime/v1/ContainerEventResponse.js';
import type { ContainerStatusResponse__Output } from '../../gen/runtime/v1/ContainerStatusResponse.js';
import type { CreateContainerRequest } from '../../gen/runtime/v1/CreateContainerRequest.js';
import type { CreateContainerResponse__Output } from '../../gen/runtime/v1/CreateContainerResponse.js';
import type { ExecSyncResponse__Output } from '../../gen/runtime/v1/ExecSyncResponse.js';
import type { ImageFsInfoResponse__Output } from '../../gen/runtime/v1/ImageFsInfoResponse.js';
import type { ImageServiceClient } from '../../gen/runtime/v1/ImageService.js';
import type { ImageStatusResponse__Output } from '../../gen/runtime/v1/ImageStatusResponse.js';
import type { ListContainersRequest } from '../../gen/runtime/v1/ListContainersRequest.js';
import type { ListContainersResponse__Output } from '../../gen/runtime/v1/ListContainersResponse.js';
import type { ListImagesResponse__Output } from '../../gen/runtime/v1/ListImagesResponse.js';
import type { ListPodSandboxRequest } from '../../gen/runtime/v1/ListPodSandboxRequest.js';
import type { ListPodSandboxResponse__Output } from '../../gen/runtime/v1/ListPodSandboxResponse.js';
import type { PodSandboxConfig } from '../../gen/runtime/v1/PodSandboxConfig.js';
import type { PodSandboxStatusResponse__Output } from '../../gen/runtime/v1/PodSandboxStatusResponse.js';
import type { PullImageRequest } from '../../gen/runtime/v1/PullImageRequest.js';
import type { PullImageResponse__Output } from '../../gen/runtime/v1/PullImageResponse.js';
import type { RunPodSandboxResponse__Output } from '../../gen/runtime/v1/RunPodSandboxResponse.js';
import type { RuntimeServiceClient } from '../../gen/runtime/v1/RuntimeService.js';
import type { VersionResponse__Output } from '../../gen/runtime/v1/VersionResponse.js';
import { AgentError } from '../../errors.js';
import { RUNTIME_SOCKET_CHANNEL_OPTIONS } from '../socket-channel.js';
import { fromGrpcError, type CallContext } from './errors.js';
import { criPackageDefinition } from './proto.js';

/** Deadline of a call unless the caller gives one, ms. */
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;

/** Per-call options. */
export interface CallOptions {
  /** Deadline of this call, ms; 0 for none. Default DEFAULT_CALL_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Cancels the call; it then fails with kind Cancelled. */
  signal?: AbortSignal;
}

type Callback<T> = (err: grpc.ServiceError | null, value?: T) => void;
type Invoke<T> = (md: grpc.Metadata, opts: grpc.CallOptions, cb: Callback<T>) => grpc.ClientUnaryCall;

/** `unix:///path` for a socket path or endpoint; other grpc targets pass through. */
export function normalizeEndpoint(endpoint: string): string {
  if (endpoint.startsWith('/')) return `unix://${endpoint}`;
  return endpoint;
}

const quote = (s: string) => JSON.stringify(s);

/** A connection to one CRI endpoint (RuntimeService and ImageService). */
export class CriClient {
  /** The endpoint as `unix:///…`. */
  readonly endpoint: string;
  private readonly runtime: RuntimeServiceClient;
  private readonly images: ImageServiceClient;

  constructor(endpoint: string) {
    this.endpoint = normalizeEndpoint(endpoint);
    const proto = grpc.loadPackageDefinition(criPackageDefinition()) as unknown as ProtoGrpcType;
    const options: grpc.ChannelOptions = {
      ...RUNTIME_SOCKET_CHANNEL_OPTIONS,
      // ExecSync may return up to 16 MiB per stream; lists of a busy node get large.
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
    };
    const creds = grpc.credentials.createInsecure();
    this.runtime = new proto.runtime.v1.RuntimeService(this.endpoint, creds, options);
    // Share the channel: one connection per endpoint.
    this.images = new proto.runtime.v1.ImageService(this.endpoint, creds, {
      ...options,
      channelOverride: this.runtime.getChannel(),
    });
  }

  /** Runtime name and versions. */
  version(opts?: CallOptions): Promise<VersionResponse__Output> {
    return this.unary('Version', '', opts, (md, o, cb) => this.runtime.Version({ version: 'v1' }, md, o, cb));
  }

  /** Creates and starts a pod sandbox; returns its id. */
  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = '', opts?: CallOptions): Promise<string> {
    const name = `${config.metadata?.namespace ?? ''}/${config.metadata?.name ?? ''}`;
    const res = await this.unary<RunPodSandboxResponse__Output>('RunPodSandbox', `pod ${quote(name)}`, opts, (md, o, cb) =>
      this.runtime.RunPodSandbox({ config, runtimeHandler }, md, o, cb),
    );
    return res.podSandboxId;
  }

  /** Stops a pod sandbox and every container in it. Idempotent by the CRI contract. */
  async stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.unary('StopPodSandbox', `pod ${quote(podSandboxId)}`, opts, (md, o, cb) =>
      this.runtime.StopPodSandbox({ podSandboxId }, md, o, cb),
    );
  }

  /** Removes a pod sandbox and its containers. Idempotent by the CRI contract. */
  async removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RemovePodSandbox', `pod ${quote(podSandboxId)}`, opts, (md, o, cb) =>
      this.runtime.RemovePodSandbox({ podSandboxId }, md, o, cb),
    );
  }

  /** Status of one pod sandbox; verbose adds the runtime's JSON info (containerd: the sandbox config). */
  podSandboxStatus(podSandboxId: string, verbose: boolean, opts?: CallOptions): Promise<PodSandboxStatusResponse__Output> {
    return this.unary('PodSandboxStatus', `pod ${quote(podSandboxId)}`, opts, (md, o, cb) =>
      this.runtime.PodSandboxStatus({ podSandboxId, verbose }, md, o, cb),
    );
  }

  /** Pod sandboxes matching the filter. */
  listPodSandbox(req: ListPodSandboxRequest = {}, opts?: CallOptions): Promise<ListPodSandboxResponse__Output> {
    return this.unary('ListPodSandbox', '', opts, (md, o, cb) => this.runtime.ListPodSandbox(req, md, o, cb));
  }

  /** Creates a container in a pod sandbox; returns its id. */
  async createContainer(req: CreateContainerRequest, opts?: CallOptions): Promise<string> {
    const what = `container ${quote(req.config?.metadata?.name ?? '')} (attempt ${req.config?.metadata?.attempt ?? 0}) in pod ${quote(req.podSandboxId ?? '')}`;
    const res = await this.unary<CreateContainerResponse__Output>('CreateContainer', what, opts, (md, o, cb) => this.runtime.CreateContainer(req, md, o, cb));
    return res.containerId;
  }

  /** Starts a created container. */
  async startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.unary('StartContainer', `container ${quote(containerId)}`, opts, (md, o, cb) =>
      this.runtime.StartContainer({ containerId }, md, o, cb),
    );
  }

  /** Stops a container, killing it after timeoutSeconds. The deadline defaults to the grace period + 30 s. */
  async stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    const o2 = { timeoutMs: timeoutSeconds * 1000 + DEFAULT_CALL_TIMEOUT_MS, ...opts };
    await this.unary('StopContainer', `container ${quote(containerId)}`, o2, (md, o, cb) =>
      this.runtime.StopContainer({ containerId, timeout: String(timeoutSeconds) }, md, o, cb),
    );
  }

  /** Removes a container. */
  async removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RemoveContainer', `container ${quote(containerId)}`, opts, (md, o, cb) =>
      this.runtime.RemoveContainer({ containerId }, md, o, cb),
    );
  }

  /** Containers matching the filter. */
  listContainers(req: ListContainersRequest = {}, opts?: CallOptions): Promise<ListContainersResponse__Output> {
    return this.unary('ListContainers', '', opts, (md, o, cb) => this.runtime.ListContainers(req, md, o, cb));
  }

  /** Status of one container; verbose adds the runtime's JSON info (containerd: config and sandboxID). */
  containerStatus(containerId: string, verbose: boolean, opts?: CallOptions): Promise<ContainerStatusResponse__Output> {
    return this.unary('ContainerStatus', `container ${quote(containerId)}`, opts, (md, o, cb) =>
      this.runtime.ContainerStatus({ containerId, verbose }, md, o, cb),
    );
  }

  /** Runs a command in a container; timeoutSeconds 0 waits forever. The deadline is that + 30 s. */
  execSync(containerId: string, cmd: string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecSyncResponse__Output> {
    const o2 = { timeoutMs: timeoutSeconds > 0 ? timeoutSeconds * 1000 + DEFAULT_CALL_TIMEOUT_MS : 0, ...opts };
    return this.unary('ExecSync', `container ${quote(containerId)}`, o2, (md, o, cb) =>
      this.runtime.ExecSync({ containerId, cmd, timeout: String(timeoutSeconds) }, md, o, cb),
    );
  }

  /**
   * The runtime's container event stream. Ends when the signal aborts; fails with FailedPrecondition when the
   * runtime does not implement it (containerd 1.6).
   */
  async *containerEvents(signal: AbortSignal): AsyncGenerator<ContainerEventResponse__Output> {
    if (signal.aborted) return;
    const call = this.runtime.GetContainerEvents({});
    const onAbort = () => call.cancel();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const ev of call as AsyncIterable<ContainerEventResponse__Output>) yield ev;
    } catch (err) {
      if (signal.aborted) return;
      throw fromGrpcError(err, { op: 'GetContainerEvents', what: '', endpoint: this.endpoint });
    } finally {
      signal.removeEventListener('abort', onAbort);
      call.cancel();
    }
  }

  /** All images. */
  listImages(opts?: CallOptions): Promise<ListImagesResponse__Output> {
    return this.unary('ListImages', '', opts, (md, o, cb) => this.images.ListImages({}, md, o, cb));
  }

  /** One image by reference or id; `image` is null when it is not present. */
  imageStatus(ref: string, opts?: CallOptions): Promise<ImageStatusResponse__Output> {
    return this.unary('ImageStatus', `image ${quote(ref)}`, opts, (md, o, cb) =>
      this.images.ImageStatus({ image: { image: ref } }, md, o, cb),
    );
  }

  /** Pulls an image; returns the runtime's image ref (containerd: the image id). No default deadline. */
  async pullImage(req: PullImageRequest, opts?: CallOptions): Promise<string> {
    const o2 = { timeoutMs: 0, ...opts };
    const res: PullImageResponse__Output = await this.unary('PullImage', `image ${quote(req.image?.image ?? '')}`, o2, (md, o, cb) =>
      this.images.PullImage(req, md, o, cb),
    );
    return res.imageRef;
  }

  /** Removes an image. */
  async removeImage(ref: string, opts?: CallOptions): Promise<void> {
    await this.unary('RemoveImage', `image ${quote(ref)}`, opts, (md, o, cb) =>
      this.images.RemoveImage({ image: { image: ref } }, md, o, cb),
    );
  }

  /** Usage of the filesystems that hold images. */
  imageFsInfo(opts?: CallOptions): Promise<ImageFsInfoResponse__Output> {
    return this.unary('ImageFsInfo', '', opts, (md, o, cb) => this.images.ImageFsInfo({}, md, o, cb));
  }

  /** Closes the connection. */
  close(): void {
    this.images.close();
    this.runtime.close();
  }

  /** Runs one unary call with a deadline and cancellation, mapping failures to AgentErrors. */
  private unary<T>(op: string, what: string, opts: CallOptions | undefined, invoke: Invoke<T>): Promise<T> {
    const ctx: CallContext = { op, what, endpoint: this.endpoint };
    const timeoutMs = opts?.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const signal = opts?.signal;
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new AgentError('Cancelled', `${op} ${what || this.endpoint}: cancelled by the caller`));
        return;
      }
      const callOpts: grpc.CallOptions = timeoutMs > 0 ? { deadline: Date.now() + timeoutMs } : {};
      const onAbort = () => call.cancel();
      const call = invoke(new grpc.Metadata(), callOpts, (err, value) => {
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(fromGrpcError(err, ctx));
        else resolve(value as T);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
