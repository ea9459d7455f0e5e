// Version: the agent's version and the runtime it drives, as `inplacectl version` prints them.
import type * as grpc from '@grpc/grpc-js';
import type { VersionRequest__Output } from '../../gen/inplace/v1/VersionRequest.js';
import type { VersionResponse } from '../../gen/inplace/v1/VersionResponse.js';
import type { ClusterHolds } from '../../gen/inplace/v1/ClusterHolds.js';
import type { RuntimeVersion } from '../../runtime/types.js';
import { PACKAGE_VERSION } from '../../version.js';
import { unary } from './unary.js';

/**
 * Handler factory for Version; runtimeVersion asks the runtime (its failure fails the call); cluster, in
 * Kubernetes mode, gives what the agent read of the cluster's admission holds at start-up.
 */
export function versionHandler(runtimeKind: string, runtimeVersion: () => Promise<RuntimeVersion>, cluster?: () => ClusterHolds | undefined): grpc.handleUnaryCall<VersionRequest__Output, VersionResponse> {
  return unary(async () => {
    const v = await runtimeVersion();
    return { version: PACKAGE_VERSION, runtime: runtimeKind, runtimeName: v.name, runtimeVersion: v.version, api: 'inplace.v1', cluster: cluster?.() };
  });
}
