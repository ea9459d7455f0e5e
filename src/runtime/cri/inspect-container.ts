// One container with the config it was created from. containerd keeps the original ContainerConfig in the
// verbose ContainerStatus info, and the sandbox's PodSandboxConfig (which CreateContainer needs again) in
// the verbose PodSandboxStatus info; both go into ContainerSpec.native.
import { AgentError } from '../../errors.js';
import type { ContainerDetail } from '../types.js';
import type { CriClient } from './client.js';
import { toContainerFromStatus, toContainerSpec } from './convert.js';
import { readContainerInfo, readSandboxConfig } from './verbose-info.js';

/** A container with its spec; NotFound naming the container when there is none. */
export async function inspectContainer(client: CriClient, containerId: string): Promise<ContainerDetail> {
  // The list item knows the image id; the status only knows a tag and a repo digest. Both are asked at once.
  const [res, { containers }] = await Promise.all([client.containerStatus(containerId, true), client.listContainers({ filter: { id: containerId } })]);
  if (!res.status) throw new AgentError('NotFound', `container "${containerId}" not found`);
  const id = res.status.id || containerId;
  const { sandboxId, config } = readContainerInfo(res.info, id);
  const item = containers.find((c) => c.id === id);
  const podId = sandboxId || item?.podSandboxId || '';
  if (!podId) throw new AgentError('Internal', `container "${id}": the runtime does not say which pod it belongs to`);
  const pod = await client.podSandboxStatus(podId, true);
  const sandboxConfig = readSandboxConfig(pod.info, podId);
  return { ...toContainerFromStatus(res.status, podId, item), spec: toContainerSpec(config, sandboxConfig, podId) };
}
