// Mocha global fixture: when the sandbox's runtimes are not answering and we are root, start the sandbox
// (scripts/sandbox up) before any test, and likewise the test cluster (scripts/kube-sandbox up, which builds
// Kubernetes first when it is missing), so `sudo npm test` on a fresh machine runs every test for real.
// When they are already up (CI starts them first), this costs one quick check each.
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { kubeEnv } from '../../src/testbed/kube-env.js';
import { sandboxEnv } from '../../src/testbed/sandbox-env.js';

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

/** Starts the sandbox and the test cluster when needed. */
export async function mochaGlobalSetup(): Promise<void> {
  if (process.env.INPLACE_SANDBOX_AUTOSTART === '0') return;
  const env = sandboxEnv();
  const up = (await answers(env.containerdAddress)) && (await answers(env.dockerHost.slice('unix://'.length)));
  const kube = kubeEnv();
  const apiUrl = new URL(kube.apiServer);
  const kubeUp = await tcpAnswers(apiUrl.hostname, Number(apiUrl.port));
  if (up && kubeUp) return;
  if (process.getuid?.() !== 0) {
    process.stderr.write('test: the runtime sandbox or test cluster is not running and starting it needs root (sudo npm test); integration tests will skip or fail\n');
    return;
  }
  if (!up) {
    process.stderr.write('test: starting the runtime sandbox (scripts/sandbox up)\n');
    const r = spawnSync('bash', [path.join(root, 'scripts/sandbox'), 'up'], { stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Error('scripts/sandbox up failed');
  }
  if (!kubeUp) {
    process.stderr.write('test: starting the test cluster (scripts/kube-sandbox up)\n');
    const r = spawnSync('bash', [path.join(root, 'scripts/kube-sandbox'), 'up'], { stdio: ['ignore', 'inherit', 'inherit'] });
    // Not fatal here: the cluster's suites then skip, or fail with INPLACE_REQUIRE_RUNTIMES=1.
    if (r.status !== 0) process.stderr.write('test: scripts/kube-sandbox up failed; Kubernetes suites will skip or fail\n');
  }
}
