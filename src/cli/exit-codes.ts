// The exit statuses of inplacectl and kubectl inplace: one table, from which both programs' help, the rule from an
// error to a status, and (checked by test/unit/docs-exit-codes.test.ts) README's and docs/reference.md's tables come.
import { asAgentError } from '../errors.js';
import { ClientReasons } from '../api/operation-states.js';
import { isCredentialsRefused } from '../k8s/api-error.js';
import { UsageError } from './args.js';
import { PrewarmUsageError } from './prewarm-command.js';
import { RolloutUsageError } from './rollout-command.js';

/** Every exit status with its one-line meaning, as the docs give it. */
export const EXIT_CODES = [
  { code: 0, name: 'ok', summary: 'success' },
  { code: 1, name: 'failed', summary: 'the operation failed or was refused, or the agent or the API server could not be reached or did not answer in time' },
  { code: 2, name: 'usage', summary: 'bad usage' },
  { code: 3, name: 'credentials', summary: "the Kubernetes API server refused the kubeconfig's credentials" },
] as const;

type ExitName = (typeof EXIT_CODES)[number]['name'];

/** Exit statuses by name: EXIT.ok, EXIT.failed, EXIT.usage, EXIT.credentials. */
export const EXIT = Object.fromEntries(EXIT_CODES.map((e) => [e.name, e.code])) as { [K in ExitName]: Extract<(typeof EXIT_CODES)[number], { name: K }>['code'] };

/** The table as help text lines. */
export function exitCodesHelp(): string {
  return ['Exit status:', ...EXIT_CODES.map((e) => `  ${e.code}  ${e.summary}`)].join('\n');
}

/** Whether err is bad usage found by the program itself. */
export function isUsage(err: unknown): err is Error {
  return err instanceof UsageError || err instanceof PrewarmUsageError || err instanceof RolloutUsageError;
}

/** The exit status for an error: 2 for bad usage and for an InvalidArgument about the request itself, 3 for refused kubeconfig credentials, else 1. */
export function exitStatusOf(err: unknown): number {
  if (isUsage(err)) return EXIT.usage;
  const e = asAgentError(err);
  if (isCredentialsRefused(e)) return EXIT.credentials;
  // An invalid preStop hook is the container's label, not the request: the request was fine.
  if (e.kind === 'InvalidArgument' && e.reason !== ClientReasons.InvalidPreStopHook) return EXIT.usage;
  return EXIT.failed;
}
