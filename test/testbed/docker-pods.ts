// Test pods on plain Docker, made the way the Docker adapter reads them: a pause sandbox container that owns
// the network namespace (`--network none`: the sandbox dockerd runs with --bridge=none) and no io.kubernetes.pod
// labels, so the pod is `docker/<sandbox name>`; then each container joined to it with NetworkMode
// `container:<sandbox id>`, all binding the same host directory. Used by integration tests, demo, benchmarks.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import Dockerode from 'dockerode';
import { AgentError } from '../../src/errors.js';
import { joinLabels } from '../../src/runtime/docker/convert.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import type { PodFixture, TestContainerSpec, TestPod, TestPodSpec } from './pod-fixture.js';
import { sandboxEnv } from './sandbox-env.js';

/** Label on every container a Docker test pod fixture creates; its value is the sandbox container's name. */
export const DOCKER_TEST_POD_LABEL = 'inplace-agent.test/pod';

/** The container-name label the kubelet's dockershim set, which the Docker adapter reads a container's name from. */
const CONTAINER_NAME_LABEL = 'io.kubernetes.container.name';

/** A dockerode client of its own for a `unix://` socket (or a bare path), for fixtures and tests. */
export function dockerClient(endpoint: string): Dockerode {
  return new Dockerode({ socketPath: endpoint.replace(/^unix:\/\//, '') });
}

/** The HTTP status of a failed dockerode call; undefined when it has none. */
function statusOf(err: unknown): number | undefined {
  return (err as { statusCode?: number } | null)?.statusCode;
}

/** A failed fixture call as an AgentError naming what it was about. */
function fixtureError(err: unknown, subject: string): AgentError {
  return new AgentError(statusOf(err) === 404 ? 'NotFound' : 'Internal', `${subject}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}

/** Docker's anonymous volumes are named by 64 hex digits. */
const anonymousVolume = /^[0-9a-f]{64}$/;

/** The PodFixture of a Docker endpoint. */
export class DockerPodFixture implements PodFixture {
  private readonly rt: DockerRuntime;
  private readonly docker: Dockerode;

  /** pauseImage runs in each sandbox; its entrypoint must sleep forever. */
  constructor(
    endpoint: string,
    private readonly pauseImage: string = sandboxEnv().images.pause,
  ) {
    this.rt = new DockerRuntime(endpoint);
    this.docker = dockerClient(endpoint);
  }

  private async ensureImage(image: string): Promise<void> {
    if (!(await this.rt.inspectImage(image))) await this.rt.pullImage(image);
  }

  private async run(body: Dockerode.ContainerCreateOptions): Promise<string> {
    try {
      const c = await this.docker.createContainer(body);
      await c.start();
      return c.id;
    } catch (err) {
      throw fixtureError(err, `test container "${body.name}"`);
    }
  }

  private memberBody(sandboxName: string, sandboxId: string, c: TestContainerSpec, pod: TestPodSpec): Dockerode.ContainerCreateOptions {
    const labels = { [CONTAINER_NAME_LABEL]: c.name, [DOCKER_TEST_POD_LABEL]: sandboxName, ...c.labels };
    const body: Dockerode.ContainerCreateOptions = {
      name: `${sandboxName}-${c.name}`,
      Image: c.image,
      Env: Object.entries(c.env ?? {}).map(([k, v]) => `${k}=${v}`),
      Labels: joinLabels(labels, c.annotations ?? {}),
      HostConfig: {
        NetworkMode: `container:${sandboxId}`,
        Binds: pod.volume ? [`${pod.volume.hostPath}:${pod.volume.mountPath}`] : [],
      },
    };
    if (c.command) body.Entrypoint = c.command;
    if (c.args) body.Cmd = c.args;
    return body;
  }

  /** Creates the sandbox and starts every container. Names get a random suffix so leftovers never collide. */
  async create(spec: TestPodSpec): Promise<TestPod> {
    for (const image of new Set([this.pauseImage, ...spec.containers.map((c) => c.image)])) await this.ensureImage(image);
    if (spec.volume) mkdirSync(spec.volume.hostPath, { recursive: true });
    const sandboxName = `${spec.name}-${randomBytes(3).toString('hex')}`;
    const podId = await this.run({
      name: sandboxName,
      Image: this.pauseImage,
      Labels: { [DOCKER_TEST_POD_LABEL]: sandboxName },
      HostConfig: { NetworkMode: 'none' },
    });
    const pod: TestPod = { podId, name: `docker/${sandboxName}`, containerIds: {} };
    try {
      for (const c of spec.containers) {
        pod.containerIds[c.name] = await this.run(this.memberBody(sandboxName, podId, c, spec));
      }
      return pod;
    } catch (err) {
      await this.remove(pod).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Force-removes every container in the pod (including replacements made by tests), then the sandbox, with
   * their anonymous volumes, also those a replacement took over by name. Succeeds when the pod is gone.
   */
  async remove(pod: TestPod): Promise<void> {
    const subject = `test pod "${pod.name}"`;
    let list: Dockerode.ContainerInfo[];
    try {
      list = await this.docker.listContainers({ all: true });
    } catch (err) {
      throw fixtureError(err, subject);
    }
    const members = await this.rt.listContainers({ podId: pod.podId });
    const ids = new Set([...members.map((c) => c.id), ...Object.values(pod.containerIds)]);
    const volumes = new Set<string>();
    for (const c of list) {
      if (!ids.has(c.Id) && c.Id !== pod.podId) continue;
      for (const m of c.Mounts ?? []) if (m.Type === 'volume' && m.Name && anonymousVolume.test(m.Name)) volumes.add(m.Name);
    }
    for (const id of [...ids, pod.podId]) {
      try {
        await this.docker.getContainer(id).remove({ force: true, v: true });
      } catch (err) {
        if (statusOf(err) !== 404) throw fixtureError(err, `container "${id}" of ${subject}`);
      }
    }
    for (const name of volumes) {
      await this.docker
        .getVolume(name)
        .remove()
        .catch((err: unknown) => {
          const status = statusOf(err);
          if (status !== 404 && status !== 409) throw new AgentError('Internal', `volume "${name}" of ${subject}: ${String(err)}`);
        });
    }
  }

  close(): void {
    this.rt.close();
  }
}
