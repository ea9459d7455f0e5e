// Where the project's one-node test cluster (scripts/kube-sandbox) lives, for tests, the demo and benchmarks.
// Every value follows the script's INPLACE_KUBE_* settings and defaults, so both agree without a config file.
import path from 'node:path';
import { sandboxEnv, type SandboxEnv } from './sandbox-env.js';

/** Locations of a running test cluster and of the runtime sandbox its kubelet uses. */
export interface KubeEnv {
  /** The cluster's runtime sandbox (its own containerd and registry, never the tests' CRI sandbox). */
  sandbox: SandboxEnv;
  /** Admin kubeconfig (system:masters, static token). */
  kubeconfig: string;
  nodeName: string;
  /** The node's address on the pod bridge; the kube-apiserver serves on it. */
  nodeIp: string;
  apiServer: string;
  /** Where scripts/build-deps puts kubectl and the other binaries. */
  binDir: string;
}

function firstAddress(subnet: string): string {
  const [net, lenText] = subnet.split('/');
  const len = Number(lenText);
  const n = (net ?? '').split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
  const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
  const first = ((n & mask) >>> 0) + 1;
  return [24, 16, 8, 0].map((shift) => (first >>> shift) & 255).join('.');
}

/** Reads the cluster's locations from INPLACE_KUBE_* variables, with scripts/kube-sandbox's defaults. */
export function kubeEnv(env: NodeJS.ProcessEnv = process.env): KubeEnv {
  const dir = env.INPLACE_KUBE_DIR ?? '/tmp/inplace-kube';
  const subnet = env.INPLACE_KUBE_SUBNET ?? '10.88.78.0/24';
  const nodeIp = firstAddress(subnet);
  const portBase = Number(env.INPLACE_KUBE_PORT_BASE ?? '16440');
  return {
    sandbox: sandboxEnv({
      INPLACE_SANDBOX_DIR: dir,
      INPLACE_SANDBOX_REGISTRY_PORT: env.INPLACE_KUBE_REGISTRY_PORT ?? '5001',
    }),
    kubeconfig: env.INPLACE_KUBECONFIG ?? path.join(dir, 'kube', 'admin.kubeconfig'),
    nodeName: env.INPLACE_KUBE_NODE ?? 'inplace-node',
    nodeIp,
    apiServer: `https://${nodeIp}:${portBase}`,
    binDir:
      env.INPLACE_KUBE_BIN ||
      path.join(env.INPLACE_DEPS_CACHE ?? '/var/cache/inplace-agent', 'k8s', env.INPLACE_K8S_VERSION ?? 'v1.36.3', 'bin'),
  };
}
