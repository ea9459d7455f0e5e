// Fault injection for outage tests: kill and start one daemon of the sandbox (scripts/sandbox kill|start),
// and freeze or resume processes (an agent stopped by INPLACE_AGENT_FAULT_STOP_AFTER_STEP, a containerd shim).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** A daemon of the sandbox that a test may kill. */
export type SandboxDaemon = 'containerd' | 'dockerd' | 'registry';

/** Runs `scripts/sandbox kill|start NAME` on the sandbox of this process's INPLACE_SANDBOX_* settings. */
export function sandboxDaemon(action: 'kill' | 'start', name: SandboxDaemon): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(root, 'scripts/sandbox'), action, name], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`scripts/sandbox ${action} ${name} failed (${code}): ${out}`))));
  });
}

/** The state letter of a process (R, S, T, Z, ...), or undefined when it is gone. */
export function processState(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** Resolves once the process is stopped (SIGSTOP); throws when it exits or timeoutMs passes first. */
export async function waitStopped(pid: number, timeoutMs = 60_000, describe = () => ''): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const st = processState(pid);
    if (st === 'T') return;
    if (st === undefined || st === 'Z') throw new Error(`process ${pid} exited instead of stopping\n${describe()}`);
    if (Date.now() > until) throw new Error(`process ${pid} did not stop within ${timeoutMs} ms\n${describe()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Pids of the containerd shims of one pod sandbox of the containerd at socket. */
export function shimPids(socket: string, sandboxId: string): number[] {
  const pids: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let args: string[];
    try {
      args = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (path.basename(args[0] ?? '').startsWith('containerd-shim') && args.includes(socket) && args.includes(sandboxId)) pids.push(Number(d));
  }
  return pids;
}
