// The two runtime adapters, as detection's factories. The only place that imports both.
import type { RuntimeFactories } from '../runtime/detect.js';
import { CriRuntime } from '../runtime/cri/cri-runtime.js';
import { DockerRuntime } from '../runtime/docker/docker-runtime.js';

/** Factories creating a CRI or a Docker adapter for an endpoint. */
export function runtimeFactories(): RuntimeFactories {
  return {
    cri: (endpoint) => new CriRuntime(endpoint),
    docker: (host) => new DockerRuntime(host),
  };
}
