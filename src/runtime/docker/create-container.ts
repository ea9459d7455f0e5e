// Creating a Docker container in an old one's place: the checks before (AutoRemove, Podman pods, the sandbox that
// owns the network, the image present), the create call from create-options.ts, and the extra networks after.
import type Dockerode from 'dockerode';
import { AgentError } from '../../errors.js';
import type { ContainerSpec, Image } from '../types.js';
import { createOptions, extraNetworks, type DockerEngine, type ImageDefaults } from './create-options.js';
import { dockerStatus } from './errors.js';
import { joinedContainer } from './pods.js';
import { PODMAN_POD_MEMBER, podmanPodMembers } from './podman-compat.js';

/** What creating a container borrows of the adapter (docker-runtime.ts). */
export interface CreateAccess {
  docker: Dockerode;
  /** dockerd or Podman. */
  engine(): Promise<DockerEngine>;
  /** The adapter's error for a failed call about subject. */
  fail(err: unknown, subject: string): AgentError;
  inspectRaw(containerId: string): Promise<Dockerode.ContainerInspectInfo>;
  inspectImage(ref: string): Promise<Image | undefined>;
  removeContainer(containerId: string): Promise<void>;
}

/** Creates (not starts) a container like spec's old one in pod podId; the id of the new container. */
export async function createContainer(d: CreateAccess, podId: string, spec: ContainerSpec, name?: string): Promise<string> {
  const native = spec.native as Dockerode.ContainerInspectInfo | undefined;
  if (!native || typeof native !== 'object' || !native.Config || !native.HostConfig || !native.Id) {
    throw new AgentError('InvalidArgument', `container spec "${spec.name}" carries no Docker inspect data`);
  }
  if (native.HostConfig.AutoRemove) {
    // Stopping it deletes it, so a failed replacement could not be rolled back to it.
    throw new AgentError('FailedPrecondition', `container "${spec.name}" was started with --rm (AutoRemove): stopping it deletes it, so it cannot be replaced in place safely`);
  }
  const engine = await d.engine();
  if (engine === 'podman') {
    const pod = (
      await podmanPodMembers(d.docker).catch((err: unknown) => {
        throw d.fail(err, 'Podman pod list');
      })
    ).get(native.Id);
    if (pod) throw new AgentError('FailedPrecondition', `container "${spec.name}" is in Podman pod "${pod.podName}": ${PODMAN_POD_MEMBER}`);
  }
  if (podId !== native.Id) {
    // The sandbox must exist and own its network, else the new container would join a stranger or nothing.
    const sandbox = await d.inspectRaw(podId).catch((err: unknown) => {
      throw AgentError.is(err, 'NotFound') ? new AgentError('NotFound', `pod "${podId}" not found`) : err;
    });
    if (joinedContainer(sandbox.HostConfig?.NetworkMode) !== undefined) {
      throw new AgentError('NotFound', `pod "${podId}" not found (container "${podId}" joins another's network)`);
    }
    podId = sandbox.Id;
  }
  // Compare image ids, not references: a tag re-pulled with new content is a new image too.
  const target = await d.inspectImage(spec.image);
  if (!target) throw new AgentError('NotFound', `image "${spec.image}" not found in Docker's store (pull it first)`);
  let oldImage: ImageDefaults | undefined;
  if (target.id !== native.Image) {
    try {
      oldImage = (await d.docker.getImage(native.Image).inspect()).Config as ImageDefaults;
    } catch (err) {
      if (dockerStatus(err) !== 404) throw d.fail(err, `image "${native.Image}"`);
    }
  }
  const body = createOptions(native, spec, {
    podId,
    imageChanged: target.id !== native.Image,
    ...(name !== undefined ? { name } : {}),
    ...(oldImage ? { oldImage } : {}),
    engine,
  });
  let id: string;
  try {
    id = (await d.docker.createContainer(body)).id;
  } catch (err) {
    const what = name !== undefined ? `container "${name}"` : `container from "${spec.name}"`;
    throw d.fail(err, dockerStatus(err) === 404 ? `image "${spec.image}" for ${what}` : `create ${what}`);
  }
  for (const net of extraNetworks(native, engine)) {
    try {
      await d.docker.getNetwork(net.name).connect({ Container: id, EndpointConfig: net.settings });
    } catch (err) {
      await d.removeContainer(id).catch(() => undefined);
      throw d.fail(err, `network "${net.name}" for the new container`);
    }
  }
  return id;
}
