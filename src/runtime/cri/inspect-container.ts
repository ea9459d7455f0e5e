// One container with the config it was created from. containerd keeps the original ContainerConfig in the
// verbose ContainerStatus info, and the sandbox's PodSandboxConfig (which CreateContainer needs again) in
// the verbose PodSandboxStatus info; both go into ContainerSpec.native. A container this agent created has its
// config remembered from the create (CreatedConfigs), and its status is then read without the verbose info: the
// runtime builds that from the container's whole OCI spec, the larger part of the call's time.
import { AgentError } from '../../errors.js';
import type { ContainerConfig } from '../../gen/runtime/v1/ContainerConfig.js';
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

/**
 * The configs this agent created containers with, by container id: what the runtime keeps as the container's
 * config is the create request's, and a container's id is never reused, so a remembered one is never stale. Bounded;
 * a container removed is forgotten.
 */
export class CreatedConfigs {
  private readonly byId = new Map<string, { podId: string; config: ContainerConfig }>();

  constructor(private readonly max = 1024) {}

  set(containerId: string, podId: string, config: ContainerConfig): void {
    if (this.byId.size >= this.max) this.byId.delete(this.byId.keys().next().value as string);
    this.byId.set(containerId, { podId, config });
  }

  get(containerId: string): { podId: string; config: ContainerConfig } | undefined {
    return this.byId.get(containerId);
  }

  delete(containerId: string): void {
    this.byId.delete(containerId);
  }
}

/** A container with its spec; NotFound naming the container when there is none. */
export async function inspectContainer(client: CriClient, containerId: string, sandboxes = new SandboxConfigCache(), created?: CreatedConfigs): Promise<ContainerDetail> {
  const known = created?.get(containerId);
  // The list item knows the image id; the status only knows a tag and a repo digest. Both are asked at once.
  const [res, { containers }] = await Promise.all([client.containerStatus(containerId, !known), client.listContainers({ filter: { id: containerId } })]);
  if (!res.status) throw new AgentError('NotFound', `container "${containerId}" not found`);
  const id = res.status.id || containerId;
  const { sandboxId, config } = known ? { sandboxId: known.podId, config: known.config } : readContainerInfo(res.info, id);
  const item = containers.find((c) => c.id === id);
  const podId = sandboxId || item?.podSandboxId || '';
  if (!podId) throw new AgentError('Internal', `container "${id}": the runtime does not say which pod it belongs to`);
  const sandboxConfig = await sandboxes.get(client, podId);
  return { ...toContainerFromStatus(res.status, podId, item), spec: toContainerSpec(config, sandboxConfig, podId) };
}
