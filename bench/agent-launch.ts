// Starting the built agent as a bench runs it: with the node flags of its shebang (as installed), output to a
// log file, ready once its API answers.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentClient } from '../src/api/client.js';

/** The repository's root (bench/ is compiled to dist/bench). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The node flags the agent's own launcher line (its shebang) gives, so the agent runs here as installed; with
 * BENCH_AGENT_NODE_FLAGS set, those instead (space-separated; empty for none), to measure what the flags cost.
 */
export function agentNodeFlags(): string[] {
  const given = process.env.BENCH_AGENT_NODE_FLAGS;
  if (given !== undefined) return given.split(/\s+/).filter((f) => f !== '');
  const first = fs.readFileSync(path.join(repoRoot, 'dist/src/daemon/main.js'), 'utf8').split('\n', 1)[0];
  return first.replace(/^#!\/usr\/bin\/env -S\s*/, '').split(/\s+/).filter((f) => f.startsWith('--'));
}

/** A started agent process. */
export interface LaunchedAgent {
  child: ChildProcess;
  client: AgentClient;
  socket: string;
  logFile: string;
  stop(): Promise<void>;
}

/**
 * Starts dist/src/daemon/main.js with the shipped node flags, listening on work/NAME.sock with state in
 * work/NAME-state, plus args; resolves once its API answers (throws with the log when it exits or takes > 30 s).
 */
export async function launchAgent(work: string, name: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<LaunchedAgent> {
  const socket = path.join(work, `${name}.sock`);
  const logFile = path.join(work, `${name}.log`);
  const log = fs.openSync(logFile, 'w');
  const child = spawn(
    process.execPath,
    [...agentNodeFlags(), path.join(repoRoot, 'dist/src/daemon/main.js'), '--listen', `unix://${socket}`, '--state-dir', path.join(work, `${name}-state`), ...args],
    { stdio: ['ignore', log, log], env },
  );
  fs.closeSync(log);
  const client = new AgentClient(`unix://${socket}`, 120_000);
  const exited = new Promise((r) => child.once('exit', r));
  for (let i = 0; ; i++) {
    try {
      await client.listOperations();
      break;
    } catch (err) {
      if (i > 300 || child.exitCode !== null) {
        client.close();
        child.kill('SIGKILL');
        throw new Error(`agent did not start: ${String(err)}\n${fs.readFileSync(logFile, 'utf8')}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    child,
    client,
    socket,
    logFile,
    stop: async () => {
      client.close();
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Resident set size of a process, in MiB. */
export function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return kb / 1024;
}
