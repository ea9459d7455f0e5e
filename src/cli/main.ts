#!/usr/bin/env node
// inplacectl: the agent's command-line client. Exit status: 0 success; 1 the operation failed or was
// refused; 2 bad usage.
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { AgentClient, DEFAULT_AGENT_SOCKET } from '../api/client.js';
import { AgentError, asAgentError } from '../errors.js';
import { MAX_TIMER_MS, parseDuration } from '../duration.js';
import { parseImageRef } from '../runtime/image-ref.js';
import type { OperationView as Operation } from '../api/convert.js';
import { isTerminal } from '../engine/operation.js';
import { progressLine, renderOperation, renderOperations, renderPlan, renderPods, restartSummary } from './render.js';
import { readAuthFileForRequest, runPull } from './pull-command.js';
import { addPrewarmCommand, PrewarmUsageError } from './prewarm-command.js';
import { addRolloutCommand, RolloutUsageError } from './rollout-command.js';

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };

/** Exit statuses. */
const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** Bad usage found after parsing (exit 2). */
class UsageError extends Error {}

interface Globals {
  agent: string;
  output: 'text' | 'json';
  cert?: string;
  key?: string;
  ca?: string;
  serverName?: string;
  kubeconfig?: string;
}

function client(g: Globals): AgentClient {
  try {
    return new AgentClient(g.agent, undefined, { cert: g.cert, key: g.key, ca: g.ca, serverName: g.serverName });
  } catch (err) {
    // Missing, unreadable, mismatched or expired TLS files: bad usage, found before anything is sent.
    throw new UsageError(asAgentError(err).message);
  }
}

function print(g: Globals, json: unknown, text: string): void {
  process.stdout.write(g.output === 'json' ? JSON.stringify(json, null, 2) + '\n' : text + '\n');
}

function collect(value: string, prev: string[]): string[] {
  return [...prev, value];
}

/** `--image NAME=IMAGE` values as a map; every image reference parsed before anything is sent. */
export function parseImageFlags(values: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    const eq = v.indexOf('=');
    if (eq <= 0 || eq === v.length - 1) throw new UsageError(`--image takes CONTAINER=IMAGE, got "${v}"`);
    const name = v.slice(0, eq);
    const image = v.slice(eq + 1);
    try {
      parseImageRef(image);
    } catch (err) {
      throw new UsageError(asAgentError(err).message);
    }
    out[name] = image;
  }
  return out;
}

function duration(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  let ms: number;
  try {
    ms = parseDuration(v);
  } catch (err) {
    throw new UsageError(`--${flag}: ${asAgentError(err).message}`);
  }
  if (ms > MAX_TIMER_MS) throw new UsageError(`--${flag}: at most 596h, got "${v}"`);
  if (flag === 'timeout' && ms === 0) throw new UsageError('--timeout must be more than 0 (leave it out for the agent\'s default)');
  return ms;
}

/** Restart arguments that are wrong whatever the node holds: refused before anything is sent (exit 2). */
export function checkRestartArgs(containers: string[], images: Record<string, string>): void {
  const seen = new Set<string>();
  for (const name of containers) {
    if (seen.has(name)) throw new UsageError(`container "${name}" is named twice`);
    seen.add(name);
  }
  for (const name of Object.keys(images)) {
    if (!seen.has(name)) throw new UsageError(`--image names container "${name}", which is not one of the containers to restart (${containers.join(', ')})`);
  }
}

/** Follows an operation until it ends, printing each step (timed from the operation's creation); returns the final record. */
async function follow(g: Globals, c: AgentClient, first: Operation): Promise<Operation> {
  let prev: Operation | undefined;
  let last = first;
  for await (const op of c.watchOperation(first.id)) {
    if (g.output === 'text') {
      const line = progressLine(prev, op);
      if (line) process.stdout.write(line + '\n');
    }
    prev = op;
    last = op;
    if (isTerminal(op.state)) break;
  }
  return last;
}

function program(): Command {
  const prog = new Command('inplacectl')
    .description('Drive inplace-agent: restart containers in place, pre-pull images, watch operations')
    .version(pkg.version)
    .addOption(new Option('--agent <uri>', 'agent API address').env('INPLACE_AGENT').default(DEFAULT_AGENT_SOCKET))
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .addOption(new Option('--cert <file>', 'client certificate (PEM) for a TCP agent (mutual TLS)').env('INPLACECTL_CERT'))
    .addOption(new Option('--key <file>', 'private key (PEM) of --cert').env('INPLACECTL_KEY'))
    .addOption(new Option('--ca <file>', 'CA certificate(s) (PEM) the agent\'s certificate must chain to').env('INPLACECTL_CA'))
    .addOption(new Option('--server-name <name>', 'name the agent\'s certificate must carry (default: the host in --agent)').env('INPLACECTL_SERVER_NAME'))
    .addOption(new Option('--kubeconfig <file>', 'restart through a ContainerRestart object in this cluster instead of the agent socket'))
    .showHelpAfterError()
    .exitOverride();
  const globals = () => prog.opts<Globals>();
  prog.hook('preAction', (_prog, action) => {
    if (globals().kubeconfig && action.name() !== 'restart' && action.parent?.name() !== 'prewarm' && action.parent?.name() !== 'rollout') throw new UsageError(`--kubeconfig works with restart, prewarm and rollout only; ${action.name()} talks to the agent socket (--agent)`);
  });

  prog
    .command('pods')
    .description('pods and containers the agent sees')
    .action(async () => {
      const g = globals();
      const c = client(g);
      try {
        const res = await c.listPods();
        print(g, res, renderPods(res));
      } finally {
        c.close();
      }
    });

  prog
    .command('restart')
    .description('recreate containers of a pod in place, optionally with new images')
    .argument('<pod>', 'NAMESPACE/NAME, a sandbox id or unique prefix (6+), or docker/<sandbox name>')
    .argument('<containers...>', 'container names in the pod, restarted one at a time in this order')
    .option('--image <container=image>', 'new image for a container (repeatable)', collect, [] as string[])
    .option('--grace <duration>', 'grace period for stopping the old container (default: the agent\'s, 30s)')
    .option('--min-ready <duration>', 'the replacement must keep running this long (default: the agent\'s, 1s)')
    .option('--timeout <duration>', 'overall deadline (default: the agent\'s, 10m)')
    .option('--no-wait', 'print the operation id and return at once')
    .option('--dry-run', 'check the request against the node and show the plan; change nothing')
    .option('--skip-pre-stop', 'stop the old containers without running their preStop hooks')
    .action(async (pod: string, containers: string[], o: { image: string[]; grace?: string; minReady?: string; timeout?: string; wait: boolean; dryRun?: boolean; skipPreStop?: boolean }) => {
      const g = globals();
      const images = parseImageFlags(o.image);
      checkRestartArgs(containers, images);
      const grace = duration('grace', o.grace);
      const minReady = duration('min-ready', o.minReady);
      const timeout = duration('timeout', o.timeout);
      const t0 = Date.now();
      if (g.kubeconfig) {
        if (o.dryRun) throw new UsageError('--dry-run needs the agent socket (it checks the request against the node); leave out --kubeconfig');
        if (o.skipPreStop) throw new UsageError('--skip-pre-stop is not part of a ContainerRestart; leave out --kubeconfig to use it');
        // loaded here only: the Kubernetes client is large, and every other command starts without it
        const { kubeRestart } = await import('./kube-restart-command.js');
        process.exitCode = await kubeRestart({ kubeconfig: g.kubeconfig, pod, containers, images, graceMs: grace, minReadyMs: minReady, timeoutMs: timeout, wait: o.wait, json: g.output === 'json', t0 });
        return;
      }
      const c = client(g);
      try {
        const op = await c.restart({
          pod,
          containers,
          images,
          graceSeconds: grace === undefined ? 0 : Math.ceil(grace / 1000),
          graceSet: grace !== undefined,
          minReadyMs: String(minReady ?? 0),
          minReadySet: minReady !== undefined,
          timeoutMs: String(timeout ?? 0),
          dryRun: !!o.dryRun,
          skipPreStop: !!o.skipPreStop,
        });
        if (o.dryRun) {
          if (op.id) {
            // An agent that predates --dry-run ignored it and queued a real operation: take it back.
            await c.cancelOperation(op.id).catch(() => undefined);
            throw new AgentError('FailedPrecondition', `this agent does not support --dry-run: it queued operation ${op.id}, which was cancelled`);
          }
          print(g, op, renderPlan(op));
          return;
        }
        if (!o.wait) {
          print(g, op, op.id);
          return;
        }
        if (g.output === 'text') process.stdout.write(`operation ${op.id} on pod ${op.podName}\n`);
        const end = await follow(g, c, op);
        print(g, end, restartSummary(end));
        if (end.state !== 'Succeeded') process.exitCode = EXIT.failed;
      } finally {
        c.close();
      }
    });

  prog
    .command('pull')
    .description('pull images into the runtime\'s store (pre-warm the node)')
    .argument('<images...>', 'image references, by tag or digest')
    .option('--parallel <n>', 'at most this many at once for this request (default: the agent\'s --max-parallel-pulls)')
    .option('--timeout <duration>', 'deadline per image')
    .option('--auth-file <file>', 'Docker config.json-style credentials')
    .option('--pin', 'protect the images from the kubelet\'s image garbage collection')
    .option('--always', 'pull even when present')
    .action(async (images: string[], o: { parallel?: string; timeout?: string; authFile?: string; pin?: boolean; always?: boolean }) => {
      const g = globals();
      for (const i of images) {
        try {
          parseImageRef(i);
        } catch (err) {
          throw new UsageError(asAgentError(err).message);
        }
      }
      const parallel = o.parallel === undefined ? 0 : Number(o.parallel);
      if (o.parallel !== undefined && (!/^\d+$/.test(o.parallel.trim()) || parallel < 1)) throw new UsageError(`--parallel takes a whole number of at least 1, got "${o.parallel}"`);
      let authConfigJson = '';
      if (o.authFile) {
        try {
          authConfigJson = await readAuthFileForRequest(o.authFile);
        } catch (err) {
          // The message names the flag and the file already.
          throw new UsageError(asAgentError(err).message);
        }
      }
      const timeout = duration('timeout', o.timeout);
      const c = client(g);
      try {
        const code = await runPull(
          c.pullImages({ images, parallel, timeoutMs: String(timeout ?? 0), authConfigJson, pin: !!o.pin, always: !!o.always }),
          { json: g.output === 'json', tty: !!process.stdout.isTTY && g.output === 'text', pin: !!o.pin },
        );
        if (code !== 0) process.exitCode = EXIT.failed;
      } finally {
        c.close();
      }
    });

  prog
    .command('ops')
    .description('operations, newest first')
    .option('--pod <pod>', 'only this pod: NAMESPACE/NAME, a sandbox id, or an id prefix of 6+ characters as `pods` prints')
    .action(async (o: { pod?: string }) => {
      const g = globals();
      const c = client(g);
      try {
        const ops = await c.listOperations(o.pod ?? '');
        print(g, ops, renderOperations(ops));
      } finally {
        c.close();
      }
    });

  prog
    .command('get')
    .description('one operation in full')
    .argument('<op-id>')
    .action(async (id: string) => {
      const g = globals();
      const c = client(g);
      try {
        const op = await c.getOperation(id);
        print(g, op, renderOperation(op));
      } finally {
        c.close();
      }
    });

  prog
    .command('watch')
    .description('follow an operation until it ends')
    .argument('<op-id>')
    .action(async (id: string) => {
      const g = globals();
      const c = client(g);
      try {
        const first = await c.getOperation(id);
        const end = await follow(g, c, first);
        print(g, end, renderOperation(end));
        if (end.state !== 'Succeeded') process.exitCode = EXIT.failed;
      } finally {
        c.close();
      }
    });

  prog
    .command('cancel')
    .description('stop an operation at its next safe point (the old containers keep running)')
    .argument('<op-id>')
    .action(async (id: string) => {
      const g = globals();
      const c = client(g);
      try {
        const op = await c.cancelOperation(id);
        print(g, op, `cancel requested for operation ${op.id} (now ${op.state})`);
      } finally {
        c.close();
      }
    });

  addPrewarmCommand(prog, globals);
  addRolloutCommand(prog, globals);
  return prog;
}

/** Runs inplacectl with argv; resolves with the exit status. */
export async function main(argv: string[]): Promise<number> {
  const prog = program();
  try {
    await prog.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; everything else commander rejects (including no command) is bad usage.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof UsageError || err instanceof PrewarmUsageError || err instanceof RolloutUsageError) {
      process.stderr.write(`inplacectl: ${err.message}\n`);
      return EXIT.usage;
    }
    const e = err instanceof AgentError ? err : asAgentError(err);
    process.stderr.write(`inplacectl: ${e.message}\n`);
    if (prog.opts<Globals>().output === 'json') {
      process.stdout.write(JSON.stringify({ error: e.message, errorKind: e.kind, ...(e.reason ? { reason: e.reason } : {}) }, null, 2) + '\n');
    }
    return EXIT.failed;
  }
}

// grpc-js passes an IP address as the TLS server name when --agent is an IP; Node then warns (DEP0123) on
// every TCP run. The certificate is still checked against that IP, so the warning only adds noise.
process.removeAllListeners('warning');
process.on('warning', (w: Error & { code?: string }) => {
  if (w.code !== 'DEP0123') process.stderr.write(`inplacectl: warning: ${w.name}: ${w.message}\n`);
});
const code = await main(process.argv);
process.exit(code);
