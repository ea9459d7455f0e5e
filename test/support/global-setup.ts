// Mocha global fixture: when the sandbox's runtimes are not answering and we are root, start the sandbox
// (scripts/sandbox up) before any test, and likewise the test cluster with CI's 3 nodes (scripts/kube-sandbox up
// --nodes 3, which builds Kubernetes first when it is missing), so `npm test` as root on a fresh machine runs every test for real; the
// containerd 2.x sandbox too (INPLACE_SANDBOX_CONTAINERD=2), when scripts/build-deps has built containerd 2.
// When they are already up (CI starts them first), this costs one quick check each.
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerd2SandboxEnv, sandboxEnv } from '../testbed/sandbox-env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

function answers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(socketPath);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

function tcpAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 2000 });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(false));
  });
}

/** Starts the containerd 2.x sandbox in dir (its own defaults for port, bridge and subnet) when containerd 2 is built. */
function startContainerd2Sandbox(dir: string): void {
  const built = spawnSync('bash', [path.join(root, 'scripts/build-deps'), 'path', 'containerd2'], { stdio: 'ignore' }).status === 0;
  // As the test cluster does: a fresh machine builds it once (from the Go module proxy), then it is cached.
  if (!built) process.stderr.write('test: containerd 2 is not built yet: scripts/sandbox builds it first (scripts/build-deps containerd2, ~4 min, once)\n');
  process.stderr.write(`test: starting the containerd 2.x sandbox in ${dir}\n`);
  const childEnv: NodeJS.ProcessEnv = { ...process.env, INPLACE_SANDBOX_CONTAINERD: '2', INPLACE_SANDBOX_DIR: dir };
  for (const k of ['INPLACE_SANDBOX_REGISTRY_PORT', 'INPLACE_SANDBOX_BRIDGE', 'INPLACE_SANDBOX_SUBNET']) delete childEnv[k];
  const r = spawnSync('bash', [path.join(root, 'scripts/sandbox'), 'up'], { stdio: ['ignore', 'inherit', 'inherit'], env: childEnv });
  if (r.status !== 0) throw new Error('INPLACE_SANDBOX_CONTAINERD=2 scripts/sandbox up failed');
}

/** Starts the sandboxes and the test cluster when needed. */
export async function mochaGlobalSetup(): Promise<void> {
  if (process.env.INPLACE_SANDBOX_AUTOSTART === '0') return;
  const env = sandboxEnv();
  const up = (await answers(env.containerdAddress)) && (await answers(env.dockerHost.slice('unix://'.length)));
  const kube = kubeEnv();
  const apiUrl = new URL(kube.apiServer);
  const kubeUp = await tcpAnswers(apiUrl.hostname, Number(apiUrl.port));
  const ctrd2 = containerd2SandboxEnv();
  const up2 = await answers(ctrd2.containerdAddress);
  if (up && kubeUp && up2) return;
  if (process.getuid?.() !== 0) {
    process.stderr.write('test: the runtime sandbox or test cluster is not running and starting it needs root (run npm test as root); integration tests will skip or fail\n');
    return;
  }
  if (!up) {
    process.stderr.write('test: starting the runtime sandbox (scripts/sandbox up)\n');
    const r = spawnSync('bash', [path.join(root, 'scripts/sandbox'), 'up'], { stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Error('scripts/sandbox up failed');
  }
  if (!up2) startContainerd2Sandbox(ctrd2.dir);
  if (!kubeUp) {
    process.stderr.write('test: starting the test cluster (scripts/kube-sandbox up --nodes 3, as CI does)\n');
    const r = spawnSync('bash', [path.join(root, 'scripts/kube-sandbox'), 'up', '--nodes', '3'], { stdio: ['ignore', 'inherit', 'inherit'] });
    // Not fatal here: the cluster's suites then skip, or fail with INPLACE_REQUIRE_RUNTIMES=1.
    if (r.status !== 0) process.stderr.write('test: scripts/kube-sandbox up failed; Kubernetes suites will skip or fail\n');
  }
}
