// Where the project's test cluster (scripts/kube-sandbox) lives, for tests, the demo and benchmarks.
// Every value follows the script's INPLACE_KUBE_* settings and defaults, so both agree without a config file;
// the list of running nodes comes from INPLACE_KUBE_NODES, else from the file the script keeps beside the cluster.
import fs from 'node:fs';
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
  /** Every running node of the cluster, the first (nodeName) first. */
  nodes: KubeNode[];
}

/** One node (kubelet) of the test cluster. */
export interface KubeNode {
  name: string;
  /** Its containerd's CRI socket, at a path that holds the node's name (node 1's is a link to the sandbox's). */
  criEndpoint: string;
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
  const nodeName = env.INPLACE_KUBE_NODE ?? 'inplace-node';
  const nodesDir = env.INPLACE_KUBE_NODES_DIR ?? path.join(dir, 'nodes');
  const names = nodeNames(env.INPLACE_KUBE_NODES, path.join(dir, 'kube', 'nodes.list'), nodeName);
  return {
    sandbox: sandboxEnv({
      INPLACE_SANDBOX_DIR: dir,
      INPLACE_SANDBOX_REGISTRY_PORT: env.INPLACE_KUBE_REGISTRY_PORT ?? '5001',
    }),
    kubeconfig: env.INPLACE_KUBECONFIG ?? path.join(dir, 'kube', 'admin.kubeconfig'),
    nodeName,
    nodeIp,
    apiServer: `https://${nodeIp}:${portBase}`,
    binDir:
      env.INPLACE_KUBE_BIN ||
      path.join(env.INPLACE_DEPS_CACHE ?? '/var/cache/inplace-agent', 'k8s', env.INPLACE_K8S_VERSION ?? 'v1.36.3', 'bin'),
    nodes: names.map((name) => ({ name, criEndpoint: `unix://${path.join(nodesDir, name, 'containerd.sock')}` })),
  };
}

function nodeNames(fromEnv: string | undefined, listFile: string, first: string): string[] {
  let names = (fromEnv ?? '').split(/\s+/).filter(Boolean);
  if (names.length === 0) {
    try {
      names = fs.readFileSync(listFile, 'utf8').split('\n').map((l) => l.trim()).filter(Boolean);
    } catch {
      names = [];
    }
  }
  return [first, ...names.filter((n) => n !== first)];
}
