// Stops and starts again the containerd of a sandbox (scripts/sandbox up), as a node's runtime restart would:
// the same binary, arguments and environment; its containers' shims live on meanwhile.
import { spawn } from 'node:child_process';
import { openSync, closeSync, readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { ProtoGrpcType } from '../../src/gen/api.js';
import { criPackageDefinition } from '../../src/runtime/cri/proto.js';
import type { SandboxEnv } from '../testbed/sandbox-env.js';

const nul = (s: string) => s.split('\0').filter((x) => x !== '');

/** The pid of the sandbox's containerd (started with --config DIR/containerd.toml). */
function containerdPid(env: SandboxEnv): number {
  const config = path.join(env.dir, 'containerd.toml');
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = nul(readFileSync(`/proc/${entry}/cmdline`, 'utf8'));
    } catch {
      continue;
    }
    if (argv.length > 0 && path.basename(argv[0]) === 'containerd' && argv.includes(config)) return Number(entry);
  }
  throw new Error(`no containerd runs with --config ${config}`);
}

/**
 * SIGTERMs the sandbox's containerd and waits until it is gone; resolves with a function that starts it again
 * exactly as it ran (its log goes on in DIR/containerd.log).
 */
export async function stopContainerd(env: SandboxEnv): Promise<() => void> {
  const pid = containerdPid(env);
  const argv = nul(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  const environ = Object.fromEntries(
    nul(readFileSync(`/proc/${pid}/environ`, 'utf8')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 20_000;
  while (existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2].match(/[ZX]/)) {
    if (Date.now() > deadline) throw new Error(`containerd ${pid} did not stop within 20 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return () => {
    const log = openSync(path.join(env.dir, 'containerd.log'), 'a');
    try {
      spawn(argv[0], argv.slice(1), { env: environ, detached: true, stdio: ['ignore', log, log] }).unref();
    } finally {
      closeSync(log);
    }
  };
}

/** Whether the CRI runtime answers Version on a connection of its own (never a pooled one in back-off). */
export function criAnswers(endpoint: string): Promise<boolean> {
  const proto = grpc.loadPackageDefinition(criPackageDefinition()) as unknown as ProtoGrpcType;
  const client = new proto.runtime.v1.RuntimeService(endpoint, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  return new Promise<boolean>((resolve) => {
    client.Version({ version: 'v1' }, { deadline: Date.now() + 1000 }, (err) => {
      client.close();
      resolve(!err);
    });
  });
}
