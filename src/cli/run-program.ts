// How inplacectl and kubectl inplace run: kubectl's argv spellings, bare invocation, usage errors, and one rule from
// an error to stderr's one line, stdout's error document (-o json|yaml) and the exit status (exit-codes.ts).
import { CommanderError, type Command } from 'commander';
import { AgentError, asAgentError } from '../errors.js';
import { EXIT, exitStatusOf, isUsage } from './exit-codes.js';
import { jsonError } from './json-error.js';
import { kubectlArgv, OUTPUT_FORMATS, outputInArgv, prepareOutput, structured, type OutputFormat } from './output.js';
import { kubeTimeoutOf } from './request-timeout.js';

/** Commander's "error: ..." with its "(Did you mean x?)" folded into one line. */
export function oneLine(message: string): string {
  return message
    .replace(/^error: /, '')
    .replace(/\n\(Did you mean (.+)\?\)/, ' (did you mean $1?)')
    .trim();
}

/**
 * Runs prog (named `name` in messages) with argv; resolves with the exit status. With no arguments it prints its
 * help and exits 0, as kubectl does.
 */
export async function runProgram(name: string, prog: Command, rawArgv: string[]): Promise<number> {
  const argv = kubectlArgv(rawArgv);
  if (argv.length <= 2) {
    prog.outputHelp();
    return EXIT.ok;
  }
  const asked = outputInArgv(argv.slice(2));
  const format: OutputFormat = (OUTPUT_FORMATS as readonly string[]).includes(asked ?? '') ? (asked as OutputFormat) : 'text';
  const errorDoc = (e: AgentError, code: number) => {
    if (format !== 'text') process.stdout.write(structured(format, jsonError(e, code)) + '\n');
  };
  try {
    await prepareOutput(format);
    await prog.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version, and a command group named without its subcommand (its help is shown), exit 0;
      // everything else commander rejects is bad usage (commander printed it, as `name: ...`).
      if (err.exitCode === 0 || err.code === 'commander.help') return EXIT.ok;
      errorDoc(new AgentError('InvalidArgument', oneLine(err.message)), EXIT.usage);
      return EXIT.usage;
    }
    const timedOut = kubeTimeoutOf(err);
    const code = timedOut ? EXIT.failed : exitStatusOf(err);
    const e = timedOut ?? (isUsage(err) ? new AgentError('InvalidArgument', err.message) : asAgentError(err));
    process.stderr.write(`${name}: ${e.message}\n`);
    errorDoc(e, code);
    return code;
  }
}
