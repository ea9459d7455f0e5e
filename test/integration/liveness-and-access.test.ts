// The daemon's liveness follows its runtime, and an operator refused by the socket's permissions is told so.
// The runtime here is the sandbox's dockerd reached through a unix socket this test owns, so that "the
// runtime went away" is this test closing its own socket, not stopping the shared runtime.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { startAgent, type AgentProcess } from '../support/agent-process.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * inplacectl as one file that `nobody` can read wherever the clone lives (a clone under a 0700 directory is
 * out of its reach): the built CLI bundled with its dependencies into a fresh directory of mode 0755 under the
 * system's temporary directory, beside copies of the package.json and proto/ it reads at run time. Returns
 * the script's path.
 */
async function ctlForNobody(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-ctl-'));
  fs.chmodSync(dir, 0o755);
  const script = path.join(dir, 'dist', 'src', 'inplacectl.mjs'); // package.json is ../../ from here, as from dist/src/*/
  await build({
    entryPoints: [path.join(ROOT, 'dist/src/cli/main.js')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    outfile: script,
    logLevel: 'error', // (the bundled libraries' own lint warnings are not this test's)
    // CommonJS dependencies (grpc-js) call require() on node's built-ins.
    banner: { js: "import { createRequire as __ctlRequire } from 'node:module'; const require = __ctlRequire(import.meta.url);" },
  });
  fs.cpSync(path.join(ROOT, 'proto'), path.join(dir, 'proto'), { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  return script;
}

/** A unix socket forwarding every connection to target; close() cuts them all and removes the socket. */
async function socketProxy(socketPath: string, target: string): Promise<{ close(): Promise<void> }> {
  const open = new Set<net.Socket>();
  const server = net.createServer((conn) => {
    const up = net.connect(target);
    open.add(conn).add(up);
    const drop = () => {
      conn.destroy();
      up.destroy();
    };
    conn.on('error', drop).on('close', drop);
    up.on('error', drop).on('close', drop);
    conn.pipe(up).pipe(conn);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(socketPath, { force: true });
    },
  };
}

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

describe('liveness without the runtime, and socket permissions (dockerd of the sandbox)', function () {
  this.timeout(60_000);
  let agent: AgentProcess | undefined;
  let proxy: { close(): Promise<void> } | undefined;
  let dir: string;
  let ctl = '';

  before(async function () {
    const rt = new DockerRuntime(env.dockerHost);
    try {
      await requireRuntime(this, 'dockerd of the sandbox', () => rt.version());
    } finally {
      rt.close();
    }
    ctl = await ctlForNobody();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-live-'));
    proxy = await socketProxy(path.join(dir, 'docker.sock'), env.dockerHost.replace(/^unix:\/\//, ''));
    agent = await startAgent(['--runtime', 'docker', '--docker-host', `unix://${path.join(dir, 'docker.sock')}`, '--metrics-addr', '127.0.0.1:0', '--liveness-runtime-timeout', '1s']);
  });

  after(async () => {
    await agent?.stop();
    await proxy?.close();
    if (ctl) fs.rmSync(path.dirname(path.dirname(path.dirname(ctl))), { recursive: true, force: true });
  });

  it('permission denied on the agent socket is said as such, naming the socket and its group (run as root: the client runs as nobody)', async () => {
    // The socket's directory open to all, so that only the socket's own mode (0660, group root) refuses; the
    // client is a copy nobody can read (ctlForNobody), so where the clone lives does not matter.
    fs.chmodSync(path.dirname(agent!.socket), 0o755);
    const res = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, ctl, '--agent', `unix://${agent!.socket}`, 'pods'], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.once('error', reject);
      child.once('exit', (code) => resolve({ code, stderr }));
    });
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stderr, new RegExp(`permission denied on the agent socket ${agent!.socket.replace(/[.]/g, '\\.')} \\(mode 0660, group "root" gid 0\\)`));
    assert.doesNotMatch(res.stderr, /is inplace-agent running/);
  });

  it('/healthz fails once the runtime has been gone longer than --liveness-runtime-timeout', async () => {
    const addr = /metrics and probes listening.*?(127\.0\.0\.1:\d+)/.exec(agent!.log())?.[1];
    assert.ok(addr, `the agent logs its metrics address:\n${agent!.log()}`);
    assert.equal((await get(`http://${addr}/healthz`)).status, 200, 'alive while the runtime answers');
    await proxy!.close();
    proxy = undefined;
    let last = { status: 0, body: '' };
    for (let i = 0; i < 40 && last.status !== 503; i++) {
      await new Promise((r) => setTimeout(r, 250));
      last = await get(`http://${addr}/healthz`);
    }
    assert.equal(last.status, 503, `not alive once the runtime is gone: ${last.body}`);
    assert.match(last.body, /the runtime has not answered for .* \(--liveness-runtime-timeout 1\.0s\)/);
  });
});
