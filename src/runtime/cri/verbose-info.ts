// Reading the JSON that containerd puts into the `info` map of a verbose ContainerStatus or PodSandboxStatus
// (key "info"): the config the container or sandbox was created from, and the container's sandbox id.
import { AgentError } from '../../errors.js';
import type { ContainerConfig } from '../../gen/runtime/v1/ContainerConfig.js';
import type { PodSandboxConfig } from '../../gen/runtime/v1/PodSandboxConfig.js';
import { containerConfigFromJson, parseJsonLossless, sandboxConfigFromJson } from './config-json.js';

/** What a container's verbose info tells. */
export interface ContainerInfo {
  sandboxId: string;
  config: ContainerConfig;
}

/** The "info" document of a verbose status, parsed; FailedPrecondition when the runtime gave none. */
function infoDocument(info: Record<string, string>, what: string): Record<string, unknown> {
  const text = info['info'];
  if (!text) {
    throw new AgentError(
      'FailedPrecondition',
      `${what}: the CRI runtime returned no "info" in its verbose status, so its creation config is unknown (containerd provides it)`,
    );
  }
  try {
    const doc = parseJsonLossless(text);
    if (typeof doc === 'object' && doc !== null && !Array.isArray(doc)) return doc as Record<string, unknown>;
  } catch (err) {
    throw new AgentError('Internal', `${what}: verbose status "info" is not JSON: ${(err as Error).message}`, { cause: err });
  }
  throw new AgentError('Internal', `${what}: verbose status "info" is not a JSON object`);
}

/** The config and sandbox id of a container from its verbose ContainerStatus info. */
export function readContainerInfo(info: Record<string, string>, containerId: string): ContainerInfo {
  const what = `container "${containerId}"`;
  const doc = infoDocument(info, what);
  if (typeof doc.config !== 'object' || doc.config === null) {
    throw new AgentError('FailedPrecondition', `${what}: the verbose status info holds no "config"`);
  }
  const sandboxId = typeof doc.sandboxID === 'string' ? doc.sandboxID : typeof doc.sandboxId === 'string' ? doc.sandboxId : '';
  return { sandboxId, config: containerConfigFromJson(doc.config) };
}

/** The config of a pod sandbox from its verbose PodSandboxStatus info. */
export function readSandboxConfig(info: Record<string, string>, podId: string): PodSandboxConfig {
  const what = `pod "${podId}"`;
  const doc = infoDocument(info, what);
  if (typeof doc.config !== 'object' || doc.config === null) {
    throw new AgentError('FailedPrecondition', `${what}: the verbose status info holds no "config"`);
  }
  return sandboxConfigFromJson(doc.config);
}
