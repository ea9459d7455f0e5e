// Runs the real inplace-agent daemon and inplacectl as child processes, as an operator would.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentClient } from '../../src/api/client.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const DAEMON = path.join(root, 'dist/src/daemon/main.js');
/** The built inplacectl. */
export const CTL = path.join(root, 'dist/src/cli/main.js');

/**
 * The test's environment without a kubeconfig (INPLACE_AGENT_KUBECONFIG would switch the agent into Kubernetes
 * mode; $KUBECONFIG, as a shell that sourced the cluster's env has, is not read by the agent but would be by a
 * client run from here): tests that want Kubernetes mode pass --kubeconfig.
 */
function withoutKubeconfig(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  delete out.KUBECONFIG;
  delete out.INPLACE_AGENT_KUBECONFIG;
  return out;
}

/**
 * Every agent process started here that has not exited yet. A test that fails or times out before its own stop
 * leaves its agent running; mocha's --exit ends this process, and these are killed on the way out.
 */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** A running agent process. */
export interface AgentProcess {
  child: ChildProcess;
  socket: string;
  stateDir: string;
  /** Everything the agent logged so far. */
  log(): string;
  /** Resolves with the exit code/signal once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
}

/**
 * Starts the agent on a runtime and waits until its API answers (readyTimeoutMs, default 20 s): on its own unix
 * socket, or, with probe, when probe() resolves (an agent given another --listen in args). With prefix, the
 * agent runs through that command (e.g. a sandboxing wrapper given the agent's directory, see prefix's type).
 */
export async function startAgent(
  args: string[],
  opts: {
    stateDir?: string;
    env?: Record<string, string>;
    probe?: () => Promise<unknown>;
    readyTimeoutMs?: number;
    /** A command that runs the agent's command line; given the agent's directory (socket and state dir). */
    prefix?: (dir: string) => string[];
  } = {},
): Promise<AgentProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-agent-'));
  const socket = path.join(dir, 'agent.sock');
  const stateDir = opts.stateDir ?? path.join(dir, 'state');
  const argv = [...(opts.prefix?.(dir) ?? []), process.execPath, DAEMON, '--listen', `unix://${socket}`, '--state-dir', stateDir, '--log-level', 'debug', ...args];
  const child = spawn(argv[0], argv.slice(1), {
    env: { ...withoutKubeconfig(process.env), ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  live.add(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );
  const readyMs = opts.readyTimeoutMs ?? 20_000;
  const deadline = Date.now() + readyMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`agent exited at start:\n${out}`);
    if (opts.probe) {
      try {
        await opts.probe();
        break;
      } catch {
        /* not yet */
      }
    } else if (fs.existsSync(socket)) {
      const c = new AgentClient(`unix://${socket}`, 2000);
      try {
        await c.listOperations();
        break;
      } catch {
        /* not yet */
      } finally {
        c.close();
      }
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`agent did not come up in ${readyMs / 1000}s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    socket,
    stateDir,
    log: () => out,
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(force);
    },
  };
}

/** The agent's exit, or undefined when it is still running after ms (so that a test never waits forever for a crash that did not come). */
export async function exitWithin(a: AgentProcess, ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([a.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A startAgent probe for an agent on TCP with mutual TLS: it answers ListOperations to the client certificate leaf. */
export function mtlsProbe(address: string, ca: string, leaf: { cert: string; key: string }): () => Promise<void> {
  return async () => {
    const c = new AgentClient(address, 2000, { ca, cert: leaf.cert, key: leaf.key });
    try {
      await c.listOperations();
    } finally {
      c.close();
    }
  };
}

/** Result of one inplacectl run. */
export interface CtlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs inplacectl against an agent socket (a path) or address (with a scheme or a port). */
export function ctl(socket: string, ...args: string[]): Promise<CtlResult> {
  const agent = socket.startsWith('/') ? `unix://${socket}` : socket;
  return runProcess(process.execPath, [CTL, '--agent', agent, ...args]);
}

/** Runs a command to its end (env: its whole environment, default this process's); its exit code and output. */
export function runProcess(command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<CtlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(env ? { env } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
