#!/usr/bin/env node
// kubectl-inplace: the kubectl plugin (`kubectl inplace ...`). It talks to the Kubernetes API only, with
// kubectl's own conventions (--kubeconfig, --context, -n/--namespace): `restart` creates a ContainerRestart
// that the agent on the pod's node runs, and follows it as `inplacectl --kubeconfig restart` does; `pods`
// lists pods with their containers and the latest in-place restart of each; `prewarm` and `rollout` are
// inplacectl's. Exit statuses and the `-o json` rule are inplacectl's (docs/reference.md).
import { Command, Option } from 'commander';
import { PACKAGE_VERSION } from '../version.js';
import { DURATION_RULE } from '../duration.js';
import { checkRestartArgs, collect, durationFlag, parseImageFlags } from './args.js';
import { exitCodesHelp } from './exit-codes.js';
import { outputOption, structured, type OutputFormat } from './output.js';
import { requestTimeoutOption } from './request-timeout.js';
import { oneLine, runProgram } from './run-program.js';
import { addPrewarmCommand } from './prewarm-command.js';
import { addRolloutCommand } from './rollout-command.js';

/** The plugin's global flags: kubectl's. */
interface PluginGlobals {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  allNamespaces?: boolean;
  requestTimeout: string;
  output: OutputFormat;
}

const NAME = 'kubectl inplace';

/** The plugin's command tree. */
export function plugin(): Command {
  const prog = new Command('kubectl-inplace')
    .usage('[--kubeconfig FILE] [--context NAME] [-n NAMESPACE] COMMAND')
    .description('In-place container restarts, image pre-warming and in-place rollouts, through the Kubernetes API (inplace-agent)')
    .version(PACKAGE_VERSION, '-V, --version')
    .addOption(new Option('--kubeconfig <file>', 'kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'))
    .addOption(new Option('--context <name>', 'kubeconfig context (default: the current one)'))
    .addOption(new Option('-n, --namespace <ns>', "namespace (default: the context's, then default)"))
    .addOption(outputOption('output format'))
    .addOption(requestTimeoutOption())
    .addHelpText('after', `\n${DURATION_RULE}\n${exitCodesHelp()}`)
    .exitOverride();
  const globals = () => prog.opts<PluginGlobals>();

  prog
    .command('restart')
    .description('restart (or upgrade) containers of a pod in place: creates a ContainerRestart and follows it')
    .argument('<pod>', 'NAMESPACE/NAME, or NAME in the namespace of -n')
    .argument('<containers...>', 'container names, restarted one at a time in this order')
    .option('--image <container=image>', 'new image for a container (repeatable)', collect)
    .option('--grace <duration>', 'grace period for stopping the old container, e.g. 20s')
    .option('--min-ready <duration>', 'the new container must keep running this long, e.g. 5s')
    .option('--timeout <duration>', 'overall deadline, e.g. 5m')
    .option('--no-wait', 'print the ContainerRestart and return at once')
    .action(async (pod: string, containers: string[], o: { image?: string[]; grace?: string; minReady?: string; timeout?: string; wait: boolean }) => {
      const g = globals();
      const images = parseImageFlags(o.image);
      checkRestartArgs(containers, images);
      const { kubeRestart } = await import('./kube-restart-command.js');
      process.exitCode = await kubeRestart({
        kubeconfig: g.kubeconfig,
        context: g.context,
        namespace: g.namespace,
        requestTimeout: g.requestTimeout,
        pod,
        containers,
        images,
        graceMs: durationFlag('grace', o.grace),
        minReadyMs: durationFlag('min-ready', o.minReady),
        timeoutMs: durationFlag('timeout', o.timeout),
        wait: o.wait,
        format: g.output,
        t0: Date.now(),
      });
    });

  prog
    .command('pods')
    .description('pods with their containers (by name) and the latest in-place restart of each')
    .option('-A, --all-namespaces', 'pods of every namespace')
    .action(async (o: { allNamespaces?: boolean }) => {
      const g = globals();
      const { listPods, renderPluginPods } = await import('./kubectl-pods.js');
      const pods = await listPods({ ...g, allNamespaces: !!o.allNamespaces });
      process.stdout.write((g.output === 'text' ? renderPluginPods(pods, !!o.allNamespaces) : structured(g.output, pods)) + '\n');
    });

  addPrewarmCommand(prog, globals);
  addRolloutCommand(prog, globals);
  for (const cmd of [prog, ...prog.commands, ...prog.commands.flatMap((c) => c.commands)]) {
    cmd.showHelpAfterError(`(run '${NAME}${cmd === prog ? '' : ' ' + (cmd.parent && cmd.parent !== prog ? `${cmd.parent.name()} ` : '') + cmd.name()} --help' for usage)`);
    cmd.configureOutput({ outputError: (str, write) => write(`${NAME}: ${oneLine(str)}\n`) });
  }
  return prog;
}

/** Runs the plugin with argv; resolves with the exit status. */
export async function main(argv: string[]): Promise<number> {
  return runProgram(NAME, plugin(), argv);
}

const code = await main(process.argv);
process.exit(code);
