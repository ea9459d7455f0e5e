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

/** One Docker Engine API to run a Docker suite against. */
export interface DockerTarget {
  /** For suite titles: "dockerd" or "Podman (Docker API)". */
  title: string;
  /** Which engine serves the API: where they differ, a test asserts each one's own truth. */
  engine: 'dockerd' | 'podman';
  /** The engine's socket, as a --docker-host value. */
  dockerHost: string;
  /** Where the engine keeps its images (DockerRootDir, Podman's graphroot). */
  dataRoot: string;
  /** The sandbox beside it (registry and images; the registry is the same for both engines). */
  env: SandboxEnv;
}

/**
 * The Docker Engine APIs every Docker suite runs against: the sandbox's dockerd, and `podman system service`
 * started by the same `scripts/sandbox up` (podman.sock in the sandbox's directory).
 */
export function dockerTargets(env: NodeJS.ProcessEnv = process.env): DockerTarget[] {
  const sandbox = sandboxEnv(env);
  return [
    { title: 'dockerd', engine: 'dockerd', dockerHost: sandbox.dockerHost, dataRoot: `${sandbox.dir}/docker`, env: sandbox },
    {
      title: 'Podman (Docker API)',
      engine: 'podman',
      dockerHost: env.INPLACE_PODMAN_HOST ?? `unix://${sandbox.dir}/podman.sock`,
      dataRoot: env.INPLACE_PODMAN_ROOT ?? `${sandbox.dir}/podman/root`,
      env: sandbox,
    },
  ];
}
