// Where the project's runtime sandbox (scripts/sandbox) puts its runtimes, for tests, the demo and benchmarks.
// Every value can be moved with an environment variable so two sandboxes can run side by side.
import path from 'node:path';

/** Endpoints and image names of a running sandbox. */
export interface SandboxEnv {
  dir: string;
  criEndpoint: string;
  containerdAddress: string;
  dockerHost: string;
  registry: string;
  images: {
    pause: string;
    busybox: string;
    appV1: string;
    appV2: string;
    crash: string;
  };
}

/** Reads the sandbox's locations from INPLACE_SANDBOX_* variables, with the script's defaults. */
export function sandboxEnv(env: NodeJS.ProcessEnv = process.env): SandboxEnv {
  const dir = env.INPLACE_SANDBOX_DIR ?? '/tmp/inplace-sandbox';
  const registry = `127.0.0.1:${env.INPLACE_SANDBOX_REGISTRY_PORT ?? '5000'}`;
  const containerdAddress = path.join(dir, 'containerd.sock');
  return {
    dir,
    criEndpoint: `unix://${containerdAddress}`,
    containerdAddress,
    dockerHost: `unix://${path.join(dir, 'docker.sock')}`,
    registry,
    images: {
      pause: `${registry}/inplace/pause:1`,
      busybox: `${registry}/inplace/busybox:1`,
      appV1: `${registry}/inplace/app:v1`,
      appV2: `${registry}/inplace/app:v2`,
      crash: `${registry}/inplace/crash:1`,
    },
  };
}
