// The runtimes every CRI suite runs against: the sandbox's containerd 1.6 (Debian's) and the containerd 2.x
// sandbox beside it. Each suite is declared once per target, with the runtime and its version in its title.
import { containerd2SandboxEnv, sandboxEnv, type SandboxEnv } from '../testbed/sandbox-env.js';

/** One containerd to run a CRI suite against. */
export interface CriTarget {
  /** For suite titles: "containerd 1.6.20 (CRI)". */
  title: string;
  /** Major version: where behaviour differs, a test asserts each major's own truth. */
  major: 1 | 2;
  /** The sandbox that runs it (its endpoint, registry and images). */
  env: SandboxEnv;
}

function target(major: 1 | 2, env: SandboxEnv): CriTarget {
  const version = env.containerdVersion || (major === 1 ? '1.6' : '2.x');
  return { title: `containerd ${version} (CRI)`, major, env };
}

/** Both containerd sandboxes, 1.6 first. A suite whose target cannot be reached skips or fails (requireRuntime). */
export function criTargets(env: NodeJS.ProcessEnv = process.env): CriTarget[] {
  return [target(1, sandboxEnv(env)), target(2, containerd2SandboxEnv(env))];
}
