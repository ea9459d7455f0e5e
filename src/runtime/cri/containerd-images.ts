// A small client for containerd's own images service on the CRI endpoint's socket (containerd serves its API
// and CRI on one socket), in the containerd namespace CRI keeps its images in (`k8s.io`). The CRI adapter
// uses it to set and remove image labels, which CRI itself cannot do.
import * as grpc from '@grpc/grpc-js';
import type { ImagesClient } from '../../gen/containerd/services/images/v1/Images.js';
import type { Image, Image__Output } from '../../gen/containerd/services/images/v1/Image.js';
import type { ProtoGrpcType } from '../../gen/images.js';
import { AgentError } from '../../errors.js';
import { loadProto } from '../../proto.js';
import { RUNTIME_SOCKET_CHANNEL_OPTIONS } from '../socket-channel.js';
import { fromGrpcError } from './errors.js';
import { CRI_NAMESPACE } from '../types.js';

const IMAGES_PROTO = 'containerd/services/images/v1/images.proto';

export { CRI_NAMESPACE };

/** Deadline of each call, ms. */
const CALL_TIMEOUT_MS = 10_000;

/** Image records of one containerd namespace, by containerd image name. */
export class ContainerdImages {
  /** The endpoint as `unix:///…`. */
  readonly endpoint: string;
  private readonly images: ImagesClient;

  /** endpoint: containerd's socket path or `unix://` endpoint. */
  constructor(
    endpoint: string,
    readonly namespace = CRI_NAMESPACE,
  ) {
    this.endpoint = endpoint.startsWith('/') ? `unix://${endpoint}` : endpoint;
    const proto = grpc.loadPackageDefinition(loadProto(IMAGES_PROTO)) as unknown as ProtoGrpcType;
    this.images = new proto.containerd.services.images.v1.Images(this.endpoint, grpc.credentials.createInsecure(), RUNTIME_SOCKET_CHANNEL_OPTIONS);
  }

  /** The image record named name, whole (its target included); NotFound when there is none. */
  async get(name: string): Promise<Image__Output> {
    const res = await this.unary<{ image: Image__Output | null }>('Images.Get', name, (md, o, cb) => this.images.Get({ name }, md, o, cb));
    if (!res.image) throw new AgentError('Internal', `Images.Get image ${JSON.stringify(name)} at ${this.endpoint}: the answer carries no image`);
    return res.image;
  }

  /**
   * Sets label key of the image record named name to value, or removes it when value is ''; other labels
   * and the target stay as they are. The record is read first and written back whole with the one label
   * changed, under a mask naming only that label, so nothing else it holds can be lost or cleared. NotFound
   * when there is no such record.
   */
  async setLabel(name: string, key: string, value: string): Promise<void> {
    const current = await this.get(name);
    if (!current.target?.digest) {
      throw new AgentError('Internal', `image record ${JSON.stringify(name)} at ${this.endpoint} was read without its target; not writing it back`);
    }
    const image: Image = { ...current, labels: { ...current.labels, [key]: value } };
    await this.unary('Images.Update', name, (md, o, cb) => this.images.Update({ image, updateMask: { paths: [`labels.${key}`] } }, md, o, cb));
  }

  /** Closes the connection. */
  close(): void {
    this.images.close();
  }

  private unary<T>(
    op: string,
    name: string,
    invoke: (md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, value?: T) => void) => unknown,
  ): Promise<T> {
    const md = new grpc.Metadata();
    md.set('containerd-namespace', this.namespace);
    return new Promise<T>((resolve, reject) => {
      invoke(md, { deadline: Date.now() + CALL_TIMEOUT_MS }, (err, value) => {
        if (err?.code === grpc.status.UNIMPLEMENTED) {
          // CRI-O, or anything else that serves CRI without containerd's own API.
          reject(new AgentError('FailedPrecondition', `${op} image ${JSON.stringify(name)}: the runtime at ${this.endpoint} does not serve containerd's images service (${err.details})`, { cause: err }));
        } else if (err) reject(fromGrpcError(err, { op, what: `image ${JSON.stringify(name)}`, endpoint: this.endpoint }));
        else resolve(value as T);
      });
    });
  }
}
