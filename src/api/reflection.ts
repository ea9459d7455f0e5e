// gRPC server reflection (grpc.reflection.v1 and v1alpha, from grpc-js's own @grpc/reflection) for the agent
// and health services, so grpcurl, evans and Postman can list, describe and call the agent without its .proto
// files. It is served on the API's own listener, so the API's access rules hold for it too: the socket's mode
// and group on a unix socket; mutual TLS and the "read" permission of --authz-file on TCP (see authz.ts).
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { LOADER_OPTIONS, protoRoot } from '../proto.js';
import type { CallerLimit } from './caller-limit.js';
import { fixMapEntryNames } from './map-entry-names.js';
import { toServiceError } from './status.js';

/** The reflection services' full method paths (both versions), each needing "read" on TCP. */
export const REFLECTION_METHODS: readonly string[] = [
  '/grpc.reflection.v1.ServerReflection/ServerReflectionInfo',
  '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo',
];

type Handler = grpc.handleBidiStreamingCall<unknown, unknown>;

/** The handlers a ReflectionService registers, by full method path. */
function handlersOf(reflection: ReflectionService): Map<string, Handler> {
  const byPath = new Map<string, Handler>();
  reflection.addToServer({
    addService: (service, impl) => {
      for (const [name, method] of Object.entries(service)) byPath.set(method.path, impl[name] as Handler);
    },
  });
  return byPath;
}

/** The descriptors reflection serves: the agent's .proto file and the health service's, with protoc's map entry names. */
function describedFiles(agentProto: string): protoLoader.PackageDefinition {
  // Field names as the .proto files spell them (the server's own definitions use camelCase; the wire
  // carries field numbers only, so both describe the same messages).
  const options = { ...LOADER_OPTIONS, keepCase: true, includeDirs: [protoRoot()] };
  const agent = protoLoader.loadSync(path.join(protoRoot(), agentProto), options);
  const health = protoLoader.loadSync(healthProtoPath, options);
  return fixMapEntryNames({ ...agent, ...health });
}

/**
 * Adds reflection over the agent's proto (agentProto, relative to proto/) and the health service to server;
 * each reflection stream counts against its caller in limit like any other call. The descriptors are built on
 * the first reflection call (about 10 MiB of memory that an agent nobody inspects does not pay).
 */
export function addReflection(server: grpc.Server, agentProto: string, limit: CallerLimit): void {
  let served: Map<string, Handler> | undefined;
  const real = () => (served ??= handlersOf(new ReflectionService(describedFiles(agentProto))));
  // An empty service registers the same methods; its handlers are replaced by the real ones' on each call.
  new ReflectionService({}).addToServer({
    addService: (service, impl) => {
      const lazy = Object.fromEntries(
        Object.entries(service).map(([name, method]) => [name, limit.duplex<unknown, unknown>((call) => real().get(method.path)!(call), toServiceError)]),
      );
      void impl;
      server.addService(service, lazy);
    },
  });
}
