// A client for the parts of containerd's own API the agent uses beside CRI: image records (labels CRI cannot
// set), content ingests and leases (byte progress of CRI pulls). containerd serves this API and CRI on one
// socket; every call is made in one containerd namespace (CRI's is `k8s.io`).
import * as grpc from '@grpc/grpc-js';
import type { ProtoGrpcType as ContentProto } from '../../gen/content.js';
import type { ProtoGrpcType as ImagesProto } from '../../gen/images.js';
import type { ProtoGrpcType as LeasesProto } from '../../gen/leases.js';
import type { ContentClient } from '../../gen/containerd/services/content/v1/Content.js';
import type { Status__Output } from '../../gen/containerd/services/content/v1/Status.js';
import type { Image, Image__Output } from '../../gen/containerd/services/images/v1/Image.js';
import type { ImagesClient } from '../../gen/containerd/services/images/v1/Images.js';
import type { LeasesClient } from '../../gen/containerd/services/leases/v1/Leases.js';
import type { Lease__Output } from '../../gen/containerd/services/leases/v1/Lease.js';
import type { Resource__Output } from '../../gen/containerd/services/leases/v1/Resource.js';
import { AgentError } from '../../errors.js';
import { loadProto } from '../../proto.js';
import { RUNTIME_SOCKET_CHANNEL_OPTIONS } from '../socket-channel.js';
import { CRI_NAMESPACE } from '../types.js';
import { containerdCall, containerdTarget, type CallScope, type UnaryInvoke } from './call.js';

/** Deadline of each call by default, ms. */
const CALL_TIMEOUT_MS = 10_000;

/** Image records, ingests and leases of one containerd namespace. */
export class ContainerdClient {
  /** The socket as `unix:///…`. */
  readonly endpoint: string;
  private readonly scope: CallScope;
  private readonly images: ImagesClient;
  private readonly content: ContentClient;
  private readonly leases: LeasesClient;

  /** address: containerd's socket path or `unix://` endpoint. */
  constructor(
    address: string,
    readonly namespace = CRI_NAMESPACE,
    callTimeoutMs = CALL_TIMEOUT_MS,
  ) {
    this.endpoint = containerdTarget(address);
    this.scope = { endpoint: this.endpoint, namespace, timeoutMs: callTimeoutMs };
    const creds = grpc.credentials.createInsecure();
    const images = grpc.loadPackageDefinition(loadProto('containerd/services/images/v1/images.proto')) as unknown as ImagesProto;
    const content = grpc.loadPackageDefinition(loadProto('containerd/services/content/v1/content.proto')) as unknown as ContentProto;
    const leases = grpc.loadPackageDefinition(loadProto('containerd/services/leases/v1/leases.proto')) as unknown as LeasesProto;
    this.images = new images.containerd.services.images.v1.Images(this.endpoint, creds, RUNTIME_SOCKET_CHANNEL_OPTIONS);
    const shared = { channelOverride: this.images.getChannel() };
    this.content = new content.containerd.services.content.v1.Content(this.endpoint, creds, shared);
    this.leases = new leases.containerd.services.leases.v1.Leases(this.endpoint, creds, shared);
  }

  /** The image record named name, whole (its target included); NotFound when there is none. */
  async getImage(name: string): Promise<Image__Output> {
    const res = await this.call<{ image: Image__Output | null }>('Images.Get', imageSubject(name), (md, o, cb) => this.images.Get({ name }, md, o, cb));
    if (!res.image) throw new AgentError('Internal', `containerd Images.Get ${imageSubject(name)} on ${this.endpoint}: the answer carries no image`);
    return res.image;
  }

  /** The image records that match any of the filters (containerd's syntax, e.g. `labels."KEY"`). */
  async listImages(filters: string[]): Promise<Image__Output[]> {
    const res = await this.call<{ images: Image__Output[] }>('Images.List', filters.join(' or '), (md, o, cb) => this.images.List({ filters }, md, o, cb));
    return res.images;
  }

  /**
   * Sets label key of the image record named name to value, or removes it when value is ''; other labels
   * and the target stay as they are. The record is read first and written back whole with the one label
   * changed, under a mask naming only that label, so nothing else it holds can be lost or cleared. NotFound
   * when there is no such record.
   */
  async setImageLabel(name: string, key: string, value: string): Promise<void> {
    const current = await this.getImage(name);
    if (!current.target?.digest) {
      throw new AgentError('Internal', `${imageSubject(name)} on ${this.endpoint} was read without its target; not writing it back`);
    }
    const image: Image = { ...current, labels: { ...current.labels, [key]: value } };
    await this.call('Images.Update', imageSubject(name), (md, o, cb) => this.images.Update({ image, updateMask: { paths: [`labels.${key}`] } }, md, o, cb));
  }

  /** Active ingests (writes in progress) of the namespace. */
  async listStatuses(): Promise<Status__Output[]> {
    const res = await this.call<{ statuses: Status__Output[] }>('Content.ListStatuses', '', (md, o, cb) => this.content.ListStatuses({}, md, o, cb));
    return res.statuses;
  }

  /** Leases of the namespace. */
  async listLeases(): Promise<Lease__Output[]> {
    const res = await this.call<{ leases: Lease__Output[] }>('Leases.List', '', (md, o, cb) => this.leases.List({}, md, o, cb));
    return res.leases;
  }

  /** Resources held by one lease. */
  async leaseResources(id: string): Promise<Resource__Output[]> {
    const res = await this.call<{ resources: Resource__Output[] }>('Leases.ListResources', `lease ${id}`, (md, o, cb) => this.leases.ListResources({ id }, md, o, cb));
    return res.resources;
  }

  /** Closes the connection. */
  close(): void {
    this.images.close();
  }

  private call<T>(op: string, what: string, invoke: UnaryInvoke<T>): Promise<T> {
    return containerdCall(this.scope, op, what, invoke);
  }
}

function imageSubject(name: string): string {
  return `image record ${JSON.stringify(name)}`;
}
