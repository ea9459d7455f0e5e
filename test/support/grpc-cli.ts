// The real gRPC command-line clients (grpcurl and evans, built by `scripts/build-deps`), run as child processes, as a
// user would. Both know the agent's API only through server reflection.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { buildDepsDir } from './build-deps.js';

/** The gRPC clients the tests run, with the variable that may name a binary of one. */
const CLIS = { grpcurl: 'INPLACE_GRPCURL', evans: 'INPLACE_EVANS' } as const;

/** The binary of a gRPC client: $INPLACE_GRPCURL / $INPLACE_EVANS, else the one scripts/build-deps built. Throws saying how to get it. */
export function grpcCliPath(name: keyof typeof CLIS, env: NodeJS.ProcessEnv = process.env): string {
  const given = env[CLIS[name]];
  if (given) {
    if (!fs.existsSync(given)) throw new Error(`${CLIS[name]}=${given} does not exist`);
    return given;
  }
  const dir = buildDepsDir(name);
  if (!dir) throw new Error(`${name} is not built: run scripts/build-deps ${name}`);
  return path.join(dir, name);
}

/**
 * evans's global options that reach the agent on a unix socket with reflection only. evans dials `HOST:PORT`; a
 * unix socket is reached as the host `unix://PATH?`, whose query swallows the `:PORT` that evans appends (grpc-go's
 * unix resolver reads the URL's path only).
 */
export function evansUnix(socket: string): string[] {
  return ['--host', `unix://${socket}?`, '--port', '0', '--reflection'];
}

/** The outcome of one client run. */
export interface GrpcCliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a gRPC client binary with args (optionally through a prefix such as setpriv), bounded by a 30 s kill. */
export function runGrpcCli(bin: string, args: string[], opts: { prefix?: string[] } = {}): Promise<GrpcCliResult> {
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
