// Runs the built inplace-agent daemon with arguments until it exits (SIGKILL after 20 s), for start-up checks.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The daemon's entry point in dist. */
export const DAEMON = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/daemon/main.js');

/** The daemon's exit code and everything it printed on stdout and stderr. */
export function runDaemon(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [DAEMON, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code) => {
      clearTimeout(kill);
      resolve({ code, output });
    });
  });
}
