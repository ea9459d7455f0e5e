// Where the project's runtime sandbox (scripts/sandbox) puts its runtimes, for tests, the demo and benchmarks.
// Every value can be moved with an environment variable so two sandboxes can run side by side: the usual one
// (containerd 1.6 and a dockerd) and one with containerd 2.x (INPLACE_SANDBOX_CONTAINERD=2 scripts/sandbox up).
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** Endpoints and image names of a running sandbox. */
export interface SandboxEnv {
  dir: string;
  criEndpoint: string;
  containerdAddress: string;
  dockerHost: string;
  registry: string;
  /** The containerd version its last `up` started (e.g. "1.6.20"), or '' before the first `up`. */
  containerdVersion: string;
  images: {
    pause: string;
    busybox: string;
    appV1: string;
    appV2: string;
    crash: string;
  };
}

/** KEY=value lines of the sandbox.conf that `scripts/sandbox up` wrote in dir ({} when there is none). */
function savedConf(dir: string): Record<string, string> {
  let text = '';
  try {
    text = readFileSync(path.join(dir, 'sandbox.conf'), 'utf8');
  } catch {
    return {};
  }
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

function envAt(dir: string, port: string, containerdVersion: string): SandboxEnv {
  const registry = `127.0.0.1:${port}`;
  const containerdAddress = path.join(dir, 'containerd.sock');
  return {
    dir,
    criEndpoint: `unix://${containerdAddress}`,
    containerdAddress,
    dockerHost: `unix://${path.join(dir, 'docker.sock')}`,
    registry,
    containerdVersion,
    images: {
      pause: `${registry}/inplace/pause:1`,
      busybox: `${registry}/inplace/busybox:1`,
      appV1: `${registry}/inplace/app:v1`,
      appV2: `${registry}/inplace/app:v2`,
      crash: `${registry}/inplace/crash:1`,
    },
  };
}

/** Reads the sandbox's locations from INPLACE_SANDBOX_* variables, with the script's defaults. */
export function sandboxEnv(env: NodeJS.ProcessEnv = process.env): SandboxEnv {
  const dir = env.INPLACE_SANDBOX_DIR ?? '/tmp/inplace-sandbox';
  const conf = savedConf(dir);
  return envAt(dir, env.INPLACE_SANDBOX_REGISTRY_PORT ?? conf.PORT ?? '5000', conf.CONTAINERD_VERSION ?? '');
}

/**
 * The containerd 2.x sandbox: its directory is INPLACE_SANDBOX_CTRD2_DIR (default the script's default for
 * INPLACE_SANDBOX_CONTAINERD=2), its registry port the one its `up` recorded there.
 */
export function containerd2SandboxEnv(env: NodeJS.ProcessEnv = process.env): SandboxEnv {
  const dir = env.INPLACE_SANDBOX_CTRD2_DIR ?? '/tmp/inplace-sandbox-ctrd2';
  const conf = savedConf(dir);
  return envAt(dir, conf.PORT ?? '5002', conf.CONTAINERD_VERSION ?? '');
}
