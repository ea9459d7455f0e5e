// Test pods on a CRI runtime, made the way kubelet makes them: a sandbox in its own network namespace (a
// CNI IP), then each container created and started in it, all mounting one host directory. Used by the
// integration tests, the demo and the benchmarks.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AgentError } from '../../src/errors.js';
import type { ContainerConfig } from '../../src/gen/runtime/v1/ContainerConfig.js';
import type { PodSandboxConfig } from '../../src/gen/runtime/v1/PodSandboxConfig.js';
import { CriClient } from '../../src/runtime/cri/client.js';
import type { PodFixture, TestContainerSpec, TestPod, TestPodSpec } from './pod-fixture.js';

/** Label on every sandbox and container a test pod fixture creates. */
export const TEST_POD_LABEL = 'inplace-agent.test/pod';

/** Pulls image into the runtime unless it is there: CreateContainer does not pull. */
async function ensureImage(client: CriClient, image: string): Promise<void> {
  const { image: present } = await client.imageStatus(image);
  if (!present) await client.pullImage({ image: { image } });
}

function sandboxConfig(spec: TestPodSpec, namespace: string, uid: string, logDirectory: string): PodSandboxConfig {
  return {
    metadata: { name: spec.name, namespace, uid, attempt: 0 },
    hostname: spec.name,
    logDirectory,
    // No kubelet labels: these pods are not kubelet-managed, and the agent refuses kubelet-managed ones
    // outside Kubernetes mode.
    labels: { [TEST_POD_LABEL]: 'true' },
    annotations: {},
    linux: {
      securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } },
    },
  };
}

function containerConfig(c: TestContainerSpec, pod: TestPodSpec): ContainerConfig {
  return {
    metadata: { name: c.name, attempt: 0 },
    image: { image: c.image },
    command: c.command ?? [],
    args: c.args ?? [],
    envs: Object.entries(c.env ?? {}).map(([key, value]) => ({ key, value })),
    mounts: pod.volume ? [{ containerPath: pod.volume.mountPath, hostPath: pod.volume.hostPath }] : [],
    labels: { [TEST_POD_LABEL]: 'true', ...c.labels },
    annotations: { ...c.annotations },
    logPath: `${c.name}/0.log`,
    linux: {
      securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } },
    },
  };
}

/** Creates a pod with started containers on the CRI runtime at endpoint. Removes what it made on failure. */
export async function createCriPod(endpoint: string, spec: TestPodSpec): Promise<TestPod> {
  const client = new CriClient(endpoint);
  try {
    return await createWith(client, spec);
  } finally {
    client.close();
  }
}

async function createWith(client: CriClient, spec: TestPodSpec): Promise<TestPod> {
  const namespace = spec.namespace ?? 'default';
  const uid = randomUUID();
  for (const image of new Set(spec.containers.map((c) => c.image))) await ensureImage(client, image);
  const logDirectory = mkdtempSync(path.join(tmpdir(), `inplace-pod-${spec.name}-`));
  const sbConfig = sandboxConfig(spec, namespace, uid, logDirectory);
  let podId: string;
  try {
    podId = await client.runPodSandbox(sbConfig, '', { timeoutMs: 120_000 });
  } catch (err) {
    rmSync(logDirectory, { recursive: true, force: true });
    throw err;
  }
  try {
    const containerIds: Record<string, string> = {};
    for (const c of spec.containers) {
      const id = await client.createContainer({ podSandboxId: podId, config: containerConfig(c, spec), sandboxConfig: sbConfig });
      containerIds[c.name] = id;
      await client.startContainer(id);
    }
    return { podId, name: `${namespace}/${spec.name}`, containerIds };
  } catch (err) {
    await removeWith(client, podId).catch(() => undefined);
    throw err;
  }
}

/** Removes an image from the CRI runtime's store; succeeds when it is already gone. */
export async function removeCriImage(endpoint: string, ref: string): Promise<void> {
  const client = new CriClient(endpoint);
  try {
    await client.removeImage(ref).catch(() => undefined);
  } finally {
    client.close();
  }
}

/** Stops and removes a pod, its containers and its log directory; succeeds when it is already gone. */
export async function removeCriPod(endpoint: string, podId: string): Promise<void> {
  const client = new CriClient(endpoint);
  try {
    await removeWith(client, podId);
  } finally {
    client.close();
  }
}

async function removeWith(client: CriClient, podId: string): Promise<void> {
  let logDirectory = '';
  try {
    const res = await client.podSandboxStatus(podId, true);
    const info = res.info['info'];
    logDirectory = info ? String((JSON.parse(info) as { config?: { log_directory?: string } }).config?.log_directory ?? '') : '';
  } catch (err) {
    if (AgentError.is(err, 'NotFound')) return;
    throw err;
  }
  const { containers } = await client.listContainers({ filter: { podSandboxId: podId } });
  await client.stopPodSandbox(podId, { timeoutMs: 120_000 });
  for (const c of containers) {
    await client.removeContainer(c.id).catch((err: unknown) => {
      if (!AgentError.is(err, 'NotFound')) throw err;
    });
  }
  await client.removePodSandbox(podId, { timeoutMs: 120_000 });
  // Only directories this fixture made (mkdtemp under the temp dir) are removed.
  if (logDirectory.startsWith(path.join(tmpdir(), 'inplace-pod-'))) rmSync(logDirectory, { recursive: true, force: true });
}

/** The PodFixture of a CRI endpoint. */
export class CriPodFixture implements PodFixture {
  private readonly client: CriClient;

  constructor(endpoint: string) {
    this.client = new CriClient(endpoint);
  }

  create(spec: TestPodSpec): Promise<TestPod> {
    return createWith(this.client, spec);
  }

  remove(pod: TestPod): Promise<void> {
    return removeWith(this.client, pod.podId);
  }

  close(): void {
    this.client.close();
  }
}
