// -o/--output of inplacectl and kubectl inplace: text, json or yaml (kubectl's spellings, `-o=json` included). YAML
// is written by js-yaml as @kubernetes/client-node ships it, loaded only when -o yaml is asked for.
import { Option } from 'commander';

/** The output formats. */
export const OUTPUT_FORMATS = ['text', 'json', 'yaml'] as const;

/** One of OUTPUT_FORMATS. */
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** The -o/--output option, with its choices. */
export function outputOption(description: string): Option {
  return new Option('-o, --output <format>', description).choices(OUTPUT_FORMATS).default('text');
}

let dumpYaml: ((value: unknown, opts?: { lineWidth?: number }) => string) | undefined;

/** Loads the YAML writer when format is yaml; call before structured() with yaml. */
export async function prepareOutput(format: string | undefined): Promise<void> {
  if (format === 'yaml' && !dumpYaml) dumpYaml = (await import('../k8s/client.js')).dumpYaml;
}

/** value as the format writes it (json: indented; yaml: one document), without the final newline. */
export function structured(format: OutputFormat, value: unknown): string {
  if (format !== 'yaml') return JSON.stringify(value, null, 2);
  if (!dumpYaml) throw new Error('prepareOutput was not called for -o yaml');
  // Through JSON first, so that yaml shows what json shows (no undefined fields, dates as text).
  // No folding of long lines: a message stays one line, as grep and kubectl users expect.
  return dumpYaml(JSON.parse(JSON.stringify(value) ?? 'null'), { lineWidth: -1 }).trimEnd();
}

/** One record of a stream (pull's events): a JSON line, or a YAML document after `---`. */
export function streamRecord(format: OutputFormat, value: unknown): string {
  return format === 'yaml' ? `---\n${structured(format, value)}` : JSON.stringify(value);
}

/** argv with kubectl's `-o=FORMAT` as `-o FORMAT` (commander would take "=FORMAT" as the value). */
export function kubectlArgv(argv: string[]): string[] {
  return argv.flatMap((a) => (/^-o=/.test(a) ? ['-o', a.slice(3)] : [a]));
}

/** The -o value argv asks for, read before parsing (for errors found while parsing); undefined when not given. */
export function outputInArgv(argv: string[]): string | undefined {
  let out: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') break;
    if ((a === '-o' || a === '--output') && i + 1 < argv.length) out = argv[++i];
    else if (a.startsWith('--output=')) out = a.slice('--output='.length);
    else if (/^-o[a-z]+$/.test(a)) out = a.slice(2);
  }
  return out;
}
