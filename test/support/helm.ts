// helm as the tests run it: the binary scripts/build-deps helm built (.ci/run builds it), and the chart
// deploy/helm/inplace-agent of this checkout.
import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildDepsDir } from './build-deps.js';
import { REPO_ROOT } from './deploy-render.js';

/** The chart's directory. */
export const CHART = path.join(REPO_ROOT, 'deploy/helm/inplace-agent');

/** The helm binary; throws saying how to build it when it is not built. */
export function helmBin(): string {
  const dir = buildDepsDir('helm');
  if (!dir) throw new Error('helm is not built: run scripts/build-deps helm');
  return path.join(dir, 'helm');
}

/** helm's message of a failed run: its stderr, else the error. */
const failure = (args: string[], err: unknown) => new Error(`helm ${args.join(' ')}: ${String((err as { stderr?: string }).stderr || err)}`);

/** Runs helm and returns its stdout; throws with its stderr. */
export function helm(args: string[]): string {
  try {
    return execFileSync(helmBin(), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    throw failure(args, err);
  }
}

/** helm without blocking the event loop (install, upgrade and uninstall wait on the cluster). */
export async function helmAsync(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  try {
    return (await promisify(execFile)(helmBin(), args, { encoding: 'utf8', env, maxBuffer: 64 << 20 })).stdout;
  } catch (err) {
    throw failure(args, err);
  }
}
