// The real evans binary (built by `scripts/build-deps evans`), a second gRPC client that knows the agent's API only
// through server reflection. evans dials `HOST:PORT`; a unix socket is reached as the host `unix://PATH?`, whose
// query swallows the `:PORT` that evans appends (grpc-go's unix resolver reads the URL's path only).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The evans binary: $INPLACE_EVANS, else the one scripts/build-deps built. Throws saying how to get it. */
export function evansPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.INPLACE_EVANS) {
    if (!fs.existsSync(env.INPLACE_EVANS)) throw new Error(`INPLACE_EVANS=${env.INPLACE_EVANS} does not exist`);
    return env.INPLACE_EVANS;
  }
  try {
    const dir = execFileSync(path.join(root, 'scripts/build-deps'), ['path', 'evans'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return path.join(dir, 'evans');
  } catch {
    throw new Error('evans is not built: run scripts/build-deps evans');
  }
}

/** evans's global options that reach the agent on a unix socket with reflection only. */
export function evansUnix(socket: string): string[] {
  return ['--host', `unix://${socket}?`, '--port', '0', '--reflection'];
}
