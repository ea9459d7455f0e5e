// Creating a container again from an inspected spec: the native CRI config with the spec's changes applied,
// in the given pod. CRI requires (name, attempt) to be unique in a sandbox while both containers exist, so a
// replacement created before the old one is removed needs a different attempt.
import { AgentError } from '../../errors.js';
import type { ContainerSpec } from '../types.js';
import type { CriClient } from './client.js';
import { isCriNative, toContainerConfig } from './convert.js';
import type { CreatedConfigs } from './inspect-container.js';
import { readSandboxConfig } from './verbose-info.js';

/** Creates the container described by spec in pod podId; returns its id. The config is remembered in created. */
export async function createContainer(client: CriClient, podId: string, spec: ContainerSpec, created?: CreatedConfigs): Promise<string> {
  const native = spec.native;
  if (!isCriNative(native)) {
    throw new AgentError('InvalidArgument', `container "${spec.name}": spec was not inspected from a CRI runtime (no CRI config in it)`);
  }
  // The sandbox config belongs to the sandbox; read it again when the container goes into another one.
  const sandboxConfig =
    native.podId === podId ? native.sandboxConfig : readSandboxConfig((await client.podSandboxStatus(podId, true)).info, podId);
  const config = toContainerConfig(spec, native);
  const id = await client.createContainer({ podSandboxId: podId, config, sandboxConfig });
  created?.set(id, podId, config);
  return id;
}
