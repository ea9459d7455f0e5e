// The two runtime adapters, as detection's factories. The only place that names both; each adapter is imported
// only when detection picks it, so an agent on containerd never loads dockerode and one on Docker never loads
// the CRI protos (idle RSS: docs/benchmarks.md).
import type { RuntimeFactories } from '../runtime/detect.js';

/** Factories creating a CRI or a Docker adapter for an endpoint, loading that adapter's code on first use. */
export function runtimeFactories(): RuntimeFactories {
  return {
    cri: async (endpoint) => new (await import('../runtime/cri/cri-runtime.js')).CriRuntime(endpoint),
    docker: async (host) => new (await import('../runtime/docker/docker-runtime.js')).DockerRuntime(host),
  };
}
