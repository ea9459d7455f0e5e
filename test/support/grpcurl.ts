// The real grpcurl binary (built by `scripts/build-deps grpcurl`), run as a child process, as a user would.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The grpcurl binary: $INPLACE_GRPCURL, else the one scripts/build-deps built. Throws saying how to get it. */
export function grpcurlPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.INPLACE_GRPCURL) {
    if (!fs.existsSync(env.INPLACE_GRPCURL)) throw new Error(`INPLACE_GRPCURL=${env.INPLACE_GRPCURL} does not exist`);
    return env.INPLACE_GRPCURL;
  }
  try {
    const dir = execFileSync(path.join(root, 'scripts/build-deps'), ['path', 'grpcurl'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return path.join(dir, 'grpcurl');
  } catch {
    throw new Error('grpcurl is not built: run scripts/build-deps grpcurl');
  }
}

/** The outcome of one grpcurl run. */
export interface GrpcurlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs grpcurl with args (optionally through a prefix such as setpriv), bounded by a 30 s kill. */
export function grpcurl(bin: string, args: string[], opts: { prefix?: string[] } = {}): Promise<GrpcurlResult> {
  const argv = [...(opts.prefix ?? []), bin, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(kill);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}
