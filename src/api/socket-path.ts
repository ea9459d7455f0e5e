// Making room for the agent's unix socket without destroying anything that is not a stale socket of ours.
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { AgentError } from '../errors.js';

/** Whether something accepts connections on the unix socket at p. */
function listening(p: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(p);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * Creates the socket's directory and removes a stale socket at p. Anything else there is left alone and
 * refused: a file, a directory or a link (FailedPrecondition), or a socket another process listens on.
 */
export async function prepareSocketPath(p: string): Promise<void> {
  await fs.mkdir(path.dirname(p), { recursive: true, mode: 0o755 });
  let st;
  try {
    st = await fs.lstat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new AgentError('FailedPrecondition', `cannot use ${p} for the agent socket: ${(err as Error).message}`);
  }
  if (!st.isSocket()) {
    const what = st.isFile() ? 'a regular file' : st.isDirectory() ? 'a directory' : st.isSymbolicLink() ? 'a symbolic link' : 'not a socket';
    throw new AgentError('FailedPrecondition', `refusing to listen on ${p}: it is ${what}, and only a stale socket is replaced; move it away or choose another --listen`);
  }
  if (await listening(p)) throw new AgentError('FailedPrecondition', `refusing to listen on ${p}: another process is serving on that socket`);
  await fs.rm(p, { force: true });
}
