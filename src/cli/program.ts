// inplacectl's commands. Exit statuses: exit-codes.ts (docs/reference.md); how it runs: run-program.ts.
import { Argument, Command } from 'commander';
import { podsFromWire } from '../api/convert.js';
import { AgentError, asAgentError } from '../errors.js';
import { parseImageRef } from '../image-ref.js';
import { DURATION_RULE } from '../duration.js';
import { PACKAGE_VERSION } from '../version.js';
import { renderOperation, renderOperations, renderPlan, renderPods, restartSummary } from './render.js';
import { readAuthFileForRequest, runPull } from './pull-command.js';
import { addPrewarmCommand } from './prewarm-command.js';
import { addRolloutCommand } from './rollout-command.js';
import { checkOperationId, checkRestartArgs, collect, durationFlag, parseImageFlags, UsageError } from './args.js';
import { CANCEL_HELP, cancelEffect } from './cancel-text.js';
import { completionScript, SHELLS } from './completion.js';
import { EXIT, exitCodesHelp, exitStatusOf } from './exit-codes.js';
import { addGlobalOptions, print, withClient, type Globals } from './agent-session.js';
import { addVersionCommand } from './version-command.js';
import { oneLine, runProgram } from './run-program.js';
import { followToEnd } from './follow.js';

export { EXIT, exitStatusOf };

/** Every command below (and with) cmd. */
function commandsOf(cmd: Command): Command[] {
  return [cmd, ...cmd.commands.flatMap(commandsOf)];
}

function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** The inplacectl command tree. */
export function program(): Command {
  const prog = addGlobalOptions(
    new Command('inplacectl')
      .description('Drive inplace-agent: restart containers in place, pre-pull images, watch operations')
      .version(PACKAGE_VERSION, '-V, --version', "print inplacectl's version (`inplacectl version` adds the agent's)"),
  )
    .addHelpText(
      'after',
      `
${DURATION_RULE}
${exitCodesHelp()}
With -o json (or yaml), stdout holds the result (pull: one JSON object per line, or one YAML document per
event), or, when the command fails without one, {"error", "errorKind", "reason"?, "exitCode"}; stderr holds
the error as one line.`,
    )
    .exitOverride();
  const globals = () => prog.opts<Globals>();
  prog.hook('preAction', (_prog, action) => checkKubeFlags(globals(), action));

  prog
    .command('pods')
    .description('pods and containers the agent sees (containers by name)')
    .action(async () => {
      const g = globals();
      await withClient(g, async (c) => {
        const res = podsFromWire(await c.listPods());
        print(g, res, renderPods(res));
      });
    });

  prog
    .command('restart')
    .description('recreate containers of a pod in place, optionally with new images')
    .argument('<pod>', 'NAMESPACE/NAME (or NAME with -n), a sandbox id or unique prefix (6+), or docker/<sandbox name>')
    .argument('<containers...>', 'container names in the pod, restarted one at a time in this order')
    .option('--image <container=image>', 'new image for a container (repeatable)', collect)
    .option('--grace <duration>', "grace period for stopping the old container, e.g. 20s (default: the agent's, 30s)")
    .option('--min-ready <duration>', "the replacement must keep running this long, e.g. 5s (default: the agent's, 1s)")
    .option('--timeout <duration>', "overall deadline, e.g. 5m; at least min-ready × the containers + one grace, else refused (DeadlineTooShort) (default: the agent's, 10m)")
    .option('--no-wait', 'print the operation id and return at once')
    .option('--dry-run', 'check the request against the node and show the plan; change nothing')
    .option('--skip-pre-stop', 'stop the old containers without running their preStop hooks')
    .action((pod: string, containers: string[], o: RestartFlags) => restartCommand(globals(), pod, containers, o));

  prog
    .command('pull')
    .description("pull images into the runtime's store (pre-warm the node)")
    .argument('<images...>', 'image references, by tag or digest')
    .option('--parallel <n>', "at most this many at once for this request (default: the agent's --max-parallel-pulls)")
    .option('--timeout <duration>', 'deadline per image, e.g. 10m')
    .option('--auth-file <file>', 'Docker config.json-style credentials')
    .option('--pin', "protect the images from the kubelet's image garbage collection (containerd 1.6.25+, 1.7.10+, 2.x)")
    .option('--always', 'pull even when present')
    .action((images: string[], o: PullFlags) => pullCommand(globals(), images, o));

  addOperationCommands(prog, globals);
  addVersionCommand(prog, globals);
  addPrewarmCommand(prog, globals);
  addRolloutCommand(prog, globals);

  prog
    .command('completion')
    .description('print a shell completion script: source <(inplacectl completion bash)')
    .addArgument(new Argument('<shell>', SHELLS.join(' or ')).choices(SHELLS))
    .action((shell: (typeof SHELLS)[number]) => {
      process.stdout.write(completionScript(prog, shell));
    });

  oneLineErrors(prog);
  return prog;
}

/** The Kubernetes flags (--kubeconfig, --context, -n) go only with the commands that talk to the API server. */
function checkKubeFlags(g: Globals, action: Command): void {
  const kube = ['prewarm', 'rollout'].includes(action.parent?.name() ?? '');
  const flag = g.kubeconfig ? '--kubeconfig' : g.context ? '--context' : g.namespace ? '-n' : undefined;
  if (flag && !kube && !['restart', 'completion'].includes(action.name())) throw new UsageError(`${flag} works with restart, prewarm and rollout only; ${action.name()} talks to the agent socket (--agent)`);
}

/** A mistake prints one line and where to look, not the whole help. */
function oneLineErrors(prog: Command): void {
  for (const cmd of commandsOf(prog)) {
    cmd.showHelpAfterError(`(run '${commandPath(cmd)} --help' for usage)`);
    cmd.configureOutput({ outputError: (str, write) => write(`${cmd === prog ? 'inplacectl' : commandPath(cmd)}: ${oneLine(str)}\n`) });
  }
}

/** `restart`'s flags. */
interface RestartFlags {
  image?: string[];
  grace?: string;
  minReady?: string;
  timeout?: string;
  wait: boolean;
  dryRun?: boolean;
  skipPreStop?: boolean;
}

/** `restart`: through the agent socket, or as a ContainerRestart with --kubeconfig or --context; follows it unless --no-wait. */
async function restartCommand(g: Globals, pod: string, containers: string[], o: RestartFlags): Promise<void> {
  const images = parseImageFlags(o.image);
  checkRestartArgs(containers, images);
  const grace = durationFlag('grace', o.grace);
  const minReady = durationFlag('min-ready', o.minReady);
  const timeout = durationFlag('timeout', o.timeout);
  const t0 = Date.now();
  if (g.kubeconfig || g.context) {
    if (o.dryRun) throw new UsageError('--dry-run needs the agent socket (it checks the request against the node); leave out --kubeconfig');
    if (o.skipPreStop) throw new UsageError('--skip-pre-stop is not part of a ContainerRestart; leave out --kubeconfig to use it');
    // loaded here only: the Kubernetes client is large, and every other command starts without it
    const { kubeRestart } = await import('./kube-restart-command.js');
    const target = { kubeconfig: g.kubeconfig, context: g.context, namespace: g.namespace, requestTimeout: g.requestTimeout };
    process.exitCode = await kubeRestart({ ...target, pod, containers, images, graceMs: grace, minReadyMs: minReady, timeoutMs: timeout, wait: o.wait, format: g.output, t0 });
    return;
  }
  await withClient(g, async (c) => {
    const op = await c.restart({
      // -n names the namespace of a NAME given alone, as kubectl's -n does.
      pod: g.namespace && !pod.includes('/') ? `${g.namespace}/${pod}` : pod,
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
    await followToEnd(g, c, op, false, restartSummary);
  });
}

/** `pull`'s flags. */
interface PullFlags {
  parallel?: string;
  timeout?: string;
  authFile?: string;
  pin?: boolean;
  always?: boolean;
}

/** `pull`: checks the images and flags, then renders the agent's pull events (runPull); a failed exit unless every image is done. */
async function pullCommand(g: Globals, images: string[], o: PullFlags): Promise<void> {
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
  const timeout = durationFlag('timeout', o.timeout);
  await withClient(g, async (c) => {
    const code = await runPull(
      c.pullImages({ images, parallel, timeoutMs: String(timeout ?? 0), authConfigJson, pin: !!o.pin, always: !!o.always }),
      { json: g.output !== 'text', yaml: g.output === 'yaml', tty: !!process.stdout.isTTY && g.output === 'text', pin: !!o.pin },
    );
    if (code !== 0) process.exitCode = EXIT.failed;
  });
}

/** The commands on the agent's operations: ops, get, watch, cancel. */
function addOperationCommands(prog: Command, globals: () => Globals): void {
  prog
    .command('ops')
    .description('operations, newest first')
    .option('--pod <pod>', 'only this pod: NAMESPACE/NAME, a sandbox id, or an id prefix of 6+ characters as `pods` prints')
    .action(async (o: { pod?: string }) => {
      const g = globals();
      await withClient(g, async (c) => {
        const ops = await c.listOperations(o.pod ?? '');
        print(g, ops, ops.length === 0 ? `no operations${o.pod ? ` for pod ${o.pod}` : ''}` : renderOperations(ops));
      });
    });

  prog
    .command('get')
    .description('one operation in full')
    .argument('<op-id>', 'the id as `ops` prints it, or a prefix of at least 6 characters')
    .action(async (id: string) => {
      checkOperationId(id);
      const g = globals();
      await withClient(g, async (c) => {
        const op = await c.getOperation(id);
        print(g, op, renderOperation(op));
      });
    });

  prog
    .command('watch')
    .description('follow an operation until it ends; what happened before is replayed first')
    .argument('<op-id>', 'the id as `ops` prints it, or a prefix of at least 6 characters')
    .action(async (id: string) => {
      checkOperationId(id);
      const g = globals();
      await withClient(g, async (c) => {
        const first = await c.getOperation(id);
        await followToEnd(g, c, first, true, renderOperation);
      });
    });

  prog
    .command('cancel')
    .summary('ask an operation to stop at its next safe point (cancel --help says what that does in each phase)')
    .description('ask an operation to stop at its next safe point')
    .addHelpText('after', CANCEL_HELP)
    .argument('<op-id>', 'the id as `ops` prints it, or a prefix of at least 6 characters')
    .action(async (id: string) => {
      checkOperationId(id);
      const g = globals();
      await withClient(g, async (c) => {
        const op = await c.cancelOperation(id);
        print(g, op, `cancel requested for operation ${op.id}: ${cancelEffect(op)}. \`inplacectl watch ${op.id.slice(0, 8)}\` shows how it ends.`);
      });
    });
}

/** Runs inplacectl with argv; resolves with the exit status. */
export async function main(argv: string[]): Promise<number> {
  return runProgram('inplacectl', program(), argv);
}
