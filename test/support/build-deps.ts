// Where `scripts/build-deps` put a dependency it builds (grpcurl, evans, kubernetes, ...).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The directory `scripts/build-deps path DEP` names, or undefined when DEP is not built. */
export function buildDepsDir(dep: string): string | undefined {
  try {
    return execFileSync(path.join(root, 'scripts/build-deps'), ['path', dep], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined;
  } catch {
    return undefined;
  }
}
