// gRPC server reflection (grpc.reflection.v1 and v1alpha, from grpc-js's own @grpc/reflection) for the agent
// and health services, so grpcurl, evans and Postman can list, describe and call the agent without its .proto
// files. It is served on the API's own listener, so the API's access rules hold for it too: the socket's mode
// and group on a unix socket; mutual TLS and the "read" permission of --authz-file on TCP (see authz.ts).
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ReflectionService } from '@grpc/reflection';
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

/** The one method of both reflection services, as their protos name it. */
const REFLECTION_METHOD_NAME = 'ServerReflectionInfo';

type Handler = grpc.handleBidiStreamingCall<unknown, unknown>;
type Method = grpc.MethodDefinition<unknown, unknown>;

/** The handlers and method definitions a ReflectionService registers, by full method path. */
function registeredBy(reflection: ReflectionService): Map<string, { handler: Handler; method: Method }> {
  const byPath = new Map<string, { handler: Handler; method: Method }>();
  reflection.addToServer({
    addService: (service, impl) => {
      for (const [name, method] of Object.entries(service)) byPath.set(method.path, { handler: impl[name] as Handler, method: method as Method });
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
 * each reflection stream counts against its caller in limit like any other call. @grpc/reflection (its own
 * proto-loader, protobufjs's descriptor types, the reflection protos) is loaded and the descriptors are built on
 * the first reflection call (about 10 MiB of memory, 1 at start-up, that an agent nobody inspects does not pay).
 */
export function addReflection(server: grpc.Server, agentProto: string, limit: CallerLimit): void {
  let served: Map<string, { handler: Handler; method: Method }> | undefined;
  const real = (methodPath: string) => {
    // A CommonJS package, required synchronously: a message's (de)serializer may be the first to need it.
    served ??= registeredBy(new (createRequire(import.meta.url)('@grpc/reflection') as typeof import('@grpc/reflection')).ReflectionService(describedFiles(agentProto)));
    return served.get(methodPath)!;
  };
  for (const methodPath of REFLECTION_METHODS) {
    // The method as the real service defines it (a bidirectional stream), each part deferring to the real one's.
    const method: Method = {
      path: methodPath,
      requestStream: true,
      responseStream: true,
      requestSerialize: (v) => real(methodPath).method.requestSerialize(v),
      requestDeserialize: (b) => real(methodPath).method.requestDeserialize(b),
      responseSerialize: (v) => real(methodPath).method.responseSerialize(v),
      responseDeserialize: (b) => real(methodPath).method.responseDeserialize(b),
    };
    const handler = limit.duplex<unknown, unknown>((call) => real(methodPath).handler(call), toServiceError);
    server.addService({ [REFLECTION_METHOD_NAME]: method }, { [REFLECTION_METHOD_NAME]: handler });
  }
}
