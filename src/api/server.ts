// The agent's gRPC server: the inplace.v1.Agent service plus the standard gRPC health and server reflection
// services, on a unix socket (mode 0660) or a TCP address (mutual TLS, every call authorized by the client
// certificate's name).
import fs from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import type { Engine } from '../engine/engine.js';
import type { ProtoGrpcType } from '../gen/agent.js';
import type { AgentHandlers } from '../gen/inplace/v1/Agent.js';
import { loadProto } from '../proto.js';
import type { AuthKeyring, PullService } from '../pull/types.js';
import { AgentError } from '../errors.js';
import { cancelOperationHandler } from './handlers/cancel-operation.js';
import { getOperationHandler } from './handlers/get-operation.js';
import { listOperationsHandler } from './handlers/list-operations.js';
import { listPodsHandler } from './handlers/list-pods.js';
import { pullImagesHandler } from './handlers/pull-images.js';
import { restartHandler } from './handlers/restart.js';
import type { RestartDefaults } from '../engine/operation.js';
import { watchOperationHandler } from './handlers/watch-operation.js';
import { versionHandler } from './handlers/version.js';
import type { ClusterHolds } from '../gen/inplace/v1/ClusterHolds.js';
import type { RuntimeCapabilities } from '../runtime/runtime.js';
import type { RuntimeVersion } from '../runtime/types.js';
import { unixPath } from './address.js';
import { authzInterceptor, type AuthzPolicy, type Denial } from './authz.js';
import { serverCredentials, type ServerTlsFiles } from './tls.js';
import { prepareSocketPath } from './socket-path.js';
import { CallerLimit } from './caller-limit.js';
import { MAX_OPEN_CALLS_PER_CALLER } from './limits.js';
import { toServiceError } from './status.js';
import { addReflection } from './reflection.js';

/** The fully qualified name of the agent service, as used by the health service. */
export const AGENT_SERVICE = 'inplace.v1.Agent';
/** The agent service's .proto file, relative to proto/. */
const AGENT_PROTO = 'inplace/v1/agent.proto';

/** What the server serves. */
export interface ServerDeps {
  engine: Engine;
  pulls: PullService;
  parseKeyring: (json: string) => AuthKeyring;
  runtimeKind: string;
  /** What the runtime can do; requests are checked against it (the longest container name). */
  runtimeCapabilities: RuntimeCapabilities;
  /** The runtime's version, asked on each Version call. */
  runtimeVersion: () => Promise<RuntimeVersion>;
  /** In Kubernetes mode: the cluster's admission holds as read at start-up (Version reports them). */
  clusterHolds?: () => ClusterHolds | undefined;
  restartDefaults: RestartDefaults;
  /** Calls one caller may have open at once (default MAX_OPEN_CALLS_PER_CALLER). */
  maxOpenCallsPerCaller?: number;
  /** Group id that owns the unix socket (its members may use the agent); the process's group when absent. */
  socketGid?: number;
  /** TLS files, required on TCP (see tls.ts). */
  tls?: ServerTlsFiles;
  /** Authorization of TCP callers, required on TCP; the policy is read on every call. */
  authz?: { policy: () => AuthzPolicy; onDenied: (d: Denial) => void };
}

/** A running API server. */
export interface ApiServer {
  /** The address it listens on, as a gRPC target (`unix:///path` or `host:port`). */
  address: string;
  health: HealthImplementation;
  /** Stops accepting calls and waits for running ones (force after graceMs). */
  stop(graceMs?: number): Promise<void>;
}

/** Starts serving on listen (`unix:///path`, `unix:path` or `host:port`). */
export async function startApiServer(listen: string, deps: ServerDeps): Promise<ApiServer> {
  const proto = grpc.loadPackageDefinition(loadProto(AGENT_PROTO)) as unknown as ProtoGrpcType;
  const socketPath = unixPath(listen);
  const credentials = serverCredentials(listen, deps.tls ?? {});
  if (!socketPath && !deps.authz) throw new AgentError('InvalidArgument', `--listen ${listen} is TCP: give --authz-file to say which client certificate names may call what`);
  const server = new grpc.Server({ interceptors: !socketPath && deps.authz ? [authzInterceptor(deps.authz.policy, deps.authz.onDenied)] : [] });
  const limit = new CallerLimit(deps.maxOpenCallsPerCaller ?? MAX_OPEN_CALLS_PER_CALLER);
  const handlers: AgentHandlers = {
    ListPods: limit.unary(listPodsHandler(deps.engine, deps.runtimeKind), toServiceError),
    PullImages: limit.stream(pullImagesHandler(deps.pulls, deps.parseKeyring), toServiceError),
    Restart: limit.unary(restartHandler(deps.engine, deps.restartDefaults, deps.runtimeCapabilities), toServiceError),
    GetOperation: limit.unary(getOperationHandler(deps.engine), toServiceError),
    ListOperations: limit.unary(listOperationsHandler(deps.engine), toServiceError),
    WatchOperation: limit.stream(watchOperationHandler(deps.engine), toServiceError),
    CancelOperation: limit.unary(cancelOperationHandler(deps.engine), toServiceError),
    Version: limit.unary(versionHandler(deps.runtimeKind, deps.runtimeVersion, deps.clusterHolds), toServiceError),
  };
  server.addService(proto.inplace.v1.Agent.service, handlers);
  const health = new HealthImplementation({ '': 'SERVING', [AGENT_SERVICE]: 'SERVING' });
  health.addToServer(server);
  addReflection(server, AGENT_PROTO, limit);

  if (socketPath) await prepareSocketPath(socketPath);
  const target = socketPath ? `unix://${socketPath}` : listen;
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(target, credentials, (err) =>
      err ? reject(new AgentError('Unavailable', `cannot listen on ${listen}: ${err.message}`)) : resolve(),
    ),
  );
  if (socketPath) {
    await fs.chmod(socketPath, 0o660);
    if (deps.socketGid !== undefined) await fs.chown(socketPath, process.getuid?.() ?? 0, deps.socketGid);
  }
  return {
    address: target,
    health,
    stop: (graceMs = 5000) =>
      new Promise<void>((resolve) => {
        health.setStatus('', 'NOT_SERVING');
        health.setStatus(AGENT_SERVICE, 'NOT_SERVING');
        // Calls still open after graceMs (e.g. watch streams of clients that never hang up) are cut.
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}
