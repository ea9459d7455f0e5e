// A small client for the parts of containerd's own API the pull service reads (content ingests, leases), on
// containerd's socket, in one containerd namespace (CRI's is `k8s.io`).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType as ContentProto } from '../gen/content.js';
import type { ProtoGrpcType as LeasesProto } from '../gen/leases.js';
import type { ContentClient } from '../gen/containerd/services/content/v1/Content.js';
import type { LeasesClient } from '../gen/containerd/services/leases/v1/Leases.js';
import type { Status__Output } from '../gen/containerd/services/content/v1/Status.js';
import type { Lease__Output } from '../gen/containerd/services/leases/v1/Lease.js';
import type { Resource__Output } from '../gen/containerd/services/leases/v1/Resource.js';
import { AgentError } from '../errors.js';
import { RUNTIME_SOCKET_CHANNEL_OPTIONS } from '../runtime/socket-channel.js';
import { CRI_NAMESPACE } from '../runtime/types.js';

const CONTENT_PROTO = 'containerd/services/content/v1/content.proto';
const LEASES_PROTO = 'containerd/services/leases/v1/leases.proto';

/** The package's proto/ directory, found by walking up from this module (works from src/ and dist/src/). */
function protoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'proto', CONTENT_PROTO))) return path.join(dir, 'proto');
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find proto/${CONTENT_PROTO} above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

let definition: protoLoader.PackageDefinition | undefined;

function packageDefinition(): protoLoader.PackageDefinition {
  const root = protoRoot();
  // Same options as scripts/gen-types.mjs, which the types in src/gen assume.
  definition ??= protoLoader.loadSync([path.join(root, CONTENT_PROTO), path.join(root, LEASES_PROTO)], {
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [root],
  });
  return definition;
}

/** Reads ingests and leases of one containerd namespace. Every call has a deadline of callTimeoutMs. */
export class ContainerdClient {
  private readonly content: ContentClient;
  private readonly leases: LeasesClient;

  /** address: containerd's socket path or `unix://` endpoint. */
  constructor(
    readonly address: string,
    readonly namespace = CRI_NAMESPACE,
    private readonly callTimeoutMs = 5000,
  ) {
    const target = address.startsWith('/') ? `unix://${address}` : address;
    const proto = grpc.loadPackageDefinition(packageDefinition()) as unknown as ContentProto & LeasesProto;
    const creds = grpc.credentials.createInsecure();
    this.content = new proto.containerd.services.content.v1.Content(target, creds, RUNTIME_SOCKET_CHANNEL_OPTIONS);
    this.leases = new proto.containerd.services.leases.v1.Leases(target, creds, { channelOverride: this.content.getChannel() });
  }

  /** Active ingests (writes in progress) of the namespace. */
  async listStatuses(): Promise<Status__Output[]> {
    const res = await this.unary<{ statuses: Status__Output[] }>('ListStatuses', (md, o, cb) => this.content.ListStatuses({}, md, o, cb));
    return res.statuses;
  }

  /** Leases of the namespace. */
  async listLeases(): Promise<Lease__Output[]> {
    const res = await this.unary<{ leases: Lease__Output[] }>('Leases.List', (md, o, cb) => this.leases.List({}, md, o, cb));
    return res.leases;
  }

  /** Resources held by one lease. */
  async leaseResources(id: string): Promise<Resource__Output[]> {
    const res = await this.unary<{ resources: Resource__Output[] }>('Leases.ListResources', (md, o, cb) => this.leases.ListResources({ id }, md, o, cb));
    return res.resources;
  }

  /** Closes the connection. */
  close(): void {
    this.content.close();
    this.leases.close();
  }

  private unary<T>(
    what: string,
    invoke: (md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, value?: T) => void) => unknown,
  ): Promise<T> {
    const md = new grpc.Metadata();
    md.set('containerd-namespace', this.namespace);
    return new Promise<T>((resolve, reject) => {
      invoke(md, { deadline: Date.now() + this.callTimeoutMs }, (err, value) => {
        if (err) {
          const kind = err.code === grpc.status.UNAVAILABLE ? 'Unavailable' : err.code === grpc.status.DEADLINE_EXCEEDED ? 'DeadlineExceeded' : 'Internal';
          reject(new AgentError(kind, `containerd ${what} on ${this.address}: ${err.details || err.message}`, { cause: err }));
        } else resolve(value as T);
      });
    });
  }
}
