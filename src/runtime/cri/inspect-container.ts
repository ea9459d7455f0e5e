// One container with the config it was created from. containerd keeps the original ContainerConfig in the
// verbose ContainerStatus info, and the sandbox's PodSandboxConfig (which CreateContainer needs again) in
// the verbose PodSandboxStatus info; both go into ContainerSpec.native.
import { AgentError } from '../../errors.js';
import type { PodSandboxConfig } from '../../gen/runtime/v1/PodSandboxConfig.js';
import type { ContainerDetail } from '../types.js';
import type { CriClient } from './client.js';
import { toContainerFromStatus, toContainerSpec } from './convert.js';
import { readContainerInfo, readSandboxConfig } from './verbose-info.js';

/**
 * Sandbox configs by sandbox id. A sandbox's config is fixed for its lifetime (a new sandbox gets a new id),
 * so a cached one is never stale; the cache is bounded.
 */
export class SandboxConfigCache {
  private readonly byId = new Map<string, PodSandboxConfig>();

  constructor(private readonly max = 512) {}

  /** The config of sandbox podId, read from the runtime once. */
  async get(client: CriClient, podId: string): Promise<PodSandboxConfig> {
    const hit = this.byId.get(podId);
    if (hit) return hit;
    const pod = await client.podSandboxStatus(podId, true);
    const config = readSandboxConfig(pod.info, podId);
    if (this.byId.size >= this.max) this.byId.delete(this.byId.keys().next().value as string);
    this.byId.set(podId, config);
    return config;
  }
}

/** A container with its spec; NotFound naming the container when there is none. */
export async function inspectContainer(client: CriClient, containerId: string, sandboxes = new SandboxConfigCache()): Promise<ContainerDetail> {
  // The list item knows the image id; the status only knows a tag and a repo digest. Both are asked at once.
  const [res, { containers }] = await Promise.all([client.containerStatus(containerId, true), client.listContainers({ filter: { id: containerId } })]);
  if (!res.status) throw new AgentError('NotFound', `container "${containerId}" not found`);
  const id = res.status.id || containerId;
  const { sandboxId, config } = readContainerInfo(res.info, id);
  const item = containers.find((c) => c.id === id);
  const podId = sandboxId || item?.podSandboxId || '';
  if (!podId) throw new AgentError('Internal', `container "${id}": the runtime does not say which pod it belongs to`);
  const sandboxConfig = await sandboxes.get(client, podId);
  return { ...toContainerFromStatus(res.status, podId, item), spec: toContainerSpec(config, sandboxConfig, podId) };
}
