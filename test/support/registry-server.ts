// Starts a private `docker-registry serve` on a loopback port with its own storage, optionally requiring basic
// auth from an htpasswd file, for the pull tests and the pull benchmark. Stopped by stop().
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A running registry. */
export interface RegistryServer {
  /** `127.0.0.1:PORT`. */
  host: string;
  port: number;
  dir: string;
  /** SIGKILLs the registry at once, as a crash would (stop() still cleans up). */
  kill(): void;
  stop(): Promise<void>;
}

/** Options of startRegistry. */
export interface RegistryServerOptions {
  /** Require this user and password (basic auth via htpasswd). */
  basicAuth?: { username: string; password: string };
}

/** A free loopback TCP port (bound then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

const BCRYPT_ALPHABET = './ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A bcrypt hash of password (the only scheme the registry's htpasswd accepts), made with libc's crypt. */
export function bcryptHash(password: string): string {
  const salt = Array.from(randomBytes(22), (b) => BCRYPT_ALPHABET[b % 64]).join('');
  // libxcrypt (Debian 12) implements $2b$; perl exposes it without extra packages.
  const res = spawnSync('perl', ['-e', 'print crypt($ARGV[0], $ARGV[1])', password, `$2b$05$${salt}`], { encoding: 'utf8' });
  if (res.status !== 0 || !res.stdout.startsWith('$2b$')) throw new Error(`cannot make a bcrypt hash with perl: ${res.stderr || res.stdout}`);
  return res.stdout;
}

async function waitReady(host: string, proc: ChildProcess, deadlineMs: number): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`docker-registry exited with ${proc.exitCode}`);
    try {
      const res = await fetch(`http://${host}/v2/`);
      if (res.status === 200 || res.status === 401) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`docker-registry on ${host} not ready after ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts a registry on a free loopback port; resolves once it answers /v2/. */
export async function startRegistry(opts: RegistryServerOptions = {}): Promise<RegistryServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'inplace-registry-'));
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const lines = [
    'version: 0.1',
    'log:',
    '  level: warn',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${path.join(dir, 'data')}`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: ${host}`,
  ];
  if (opts.basicAuth) {
    writeFileSync(path.join(dir, 'htpasswd'), `${opts.basicAuth.username}:${bcryptHash(opts.basicAuth.password)}\n`);
    lines.push('auth:', '  htpasswd:', '    realm: inplace-test', `    path: ${path.join(dir, 'htpasswd')}`);
  }
  writeFileSync(path.join(dir, 'config.yml'), lines.join('\n') + '\n');
  const proc = spawn('docker-registry', ['serve', path.join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr?.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-4000);
  });
  try {
    await waitReady(host, proc, 10_000);
  } catch (err) {
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${(err as Error).message}: ${stderr}`);
  }
  return {
    host,
    port,
    dir,
    kill: () => {
      proc.kill('SIGKILL');
    },
    stop: async () => {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (proc.exitCode === null) proc.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
