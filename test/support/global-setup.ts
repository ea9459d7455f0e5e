// Mocha global fixture: when the sandbox's runtimes are not answering and we are root, start the sandbox
// (scripts/sandbox up) before any test, so `sudo npm test` on a fresh machine runs every test for real.
// When it is already up (CI starts it first), this costs one quick check.
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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

/** Starts the sandbox when needed. */
export async function mochaGlobalSetup(): Promise<void> {
  const env = sandboxEnv();
  const up = (await answers(env.containerdAddress)) && (await answers(env.dockerHost.slice('unix://'.length)));
  if (up || process.env.INPLACE_SANDBOX_AUTOSTART === '0') return;
  if (process.getuid?.() !== 0) {
    process.stderr.write('test: the runtime sandbox is not running and starting it needs root (sudo npm test); integration tests will skip or fail\n');
    return;
  }
  process.stderr.write('test: starting the runtime sandbox (scripts/sandbox up)\n');
  const r = spawnSync('bash', [path.join(root, 'scripts/sandbox'), 'up'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error('scripts/sandbox up failed');
}
