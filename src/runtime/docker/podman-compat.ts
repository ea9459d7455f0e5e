// Where Podman's Docker Engine API (podman system service, 4.x) answers differently from dockerd, the shapes
// dockerd gives, so the rest of the adapter sees one engine. Each rule names what Podman sends.
import type Dockerode from 'dockerode';
import { AgentError } from '../../errors.js';

/**
 * The container list with HostConfig.NetworkMode on every entry: Podman lists `HostConfig: null`, so the
 * `container:<sandbox>` links that group pods are read from each such container's inspect. A container gone
 * between the list and its inspect keeps no network mode (it is a pod of one, as it would be a moment later).
 */
export async function withNetworkModes(docker: Dockerode, list: Dockerode.ContainerInfo[]): Promise<Dockerode.ContainerInfo[]> {
  return Promise.all(
    list.map(async (c) => {
      if (c.HostConfig) return c;
      try {
        const info = await docker.getContainer(c.Id).inspect();
        return { ...c, HostConfig: { NetworkMode: info.HostConfig.NetworkMode ?? '' } };
      } catch {
        return c;
      }
    }),
  );
}

/** Docker's ulimit name for an inspected one: Podman reports `RLIMIT_NOFILE` and refuses it back on create (`nofile`). */
export function ulimitName(name: string): string {
  return /^RLIMIT_/i.test(name) ? name.slice('RLIMIT_'.length).toLowerCase() : name;
}

/**
 * Podman's answers that carry the wrong HTTP status, with the status dockerd gives for the same refusal. Each is
 * Podman 4.3's own text, checked by test/integration/docker-runtime.test.ts against a real Podman.
 */
const PODMAN_STATUS: ReadonlyArray<{ status: number; text: RegExp; dockerStatus: number }> = [
  // Create with a name in use: dockerd answers 409 Conflict, Podman 500.
  { status: 500, text: /that name is already in use/, dockerStatus: 409 },
  // Exec in a container that is not running: dockerd answers 409 Conflict, Podman 500.
  { status: 500, text: /can only create exec sessions on running containers/, dockerStatus: 409 },
];

/** The status dockerd would have answered for a reply of status with message text (the same when none differs). */
export function dockerStatusFor(status: number, text: string): number {
  return PODMAN_STATUS.find((r) => r.status === status && r.text.test(text))?.dockerStatus ?? status;
}

/**
 * Bytes the images take, from `GET /system/df`: dockerd's LayersSize; Podman (4.3) sends LayersSize 0, so there
 * the images' own sizes less what they share with one another.
 */
export function imagesBytes(df: { LayersSize?: number; Images?: { Size?: number; SharedSize?: number }[] | null }): number {
  if (df.LayersSize) return df.LayersSize;
  const images = df.Images ?? [];
  const own = images.reduce((sum, i) => sum + Math.max(0, (i.Size ?? 0) - Math.max(0, i.SharedSize ?? 0)), 0);
  const shared = Math.max(0, ...images.map((i) => i.SharedSize ?? 0));
  return own + shared;
}

/** Whether a `GET /version` answer is Podman's (`podman system service` lists a "Podman Engine" component). */
export function isPodman(v: { Components?: { Name?: string }[] | null }): boolean {
  return (v.Components ?? []).some((c) => /^podman/i.test(c.Name ?? ''));
}

/** Where Podman serves its own API (libpod), beside the Docker one: only under a version path. */
const LIBPOD = '/v4.0.0/libpod';

/** A container's place in a pod of Podman's own (`podman pod create`). */
export interface PodmanPodMember {
  /** The pod's id. */
  podId: string;
  /** The pod's name. */
  podName: string;
  /** Whether this is the pod's infra container, which holds the pod's namespaces. */
  infra: boolean;
}

/**
 * Podman's pods by container id, from its own container list (`GET /libpod/containers/json`): its Docker API
 * shows neither a container's pod nor which container is a pod's infra container. Containers in no pod are absent.
 */
export async function podmanPodMembers(docker: Dockerode): Promise<Map<string, PodmanPodMember>> {
  const list = (await libpodGet(docker, '/containers/json', { all: true })) as { Id: string; Pod?: string; PodName?: string; IsInfra?: boolean }[];
  const out = new Map<string, PodmanPodMember>();
  for (const c of list ?? []) {
    if (c.Pod) out.set(c.Id, { podId: c.Pod, podName: c.PodName || c.Pod.slice(0, 12), infra: c.IsInfra === true });
  }
  return out;
}

function libpodGet(docker: Dockerode, path: string, options: Record<string, unknown>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    docker.modem.dial(
      { path: `${LIBPOD}${path}?`, method: 'GET', options, statusCodes: { 200: true, 404: 'no such container', 500: 'server error' } },
      (err: unknown, data: unknown) => (err ? reject(err) : resolve(data)),
    );
  });
}

/** Why a member of a Podman pod is not replaced in place: Podman's Docker API cannot create a container in a pod. */
export const PODMAN_POD_MEMBER =
  "Podman's Docker API cannot create a container inside a pod, so a replacement would run outside the pod (podman pod stop/rm would no longer reach it); restart it with podman restart, or podman pod restart";

/** One network a Podman container's replacement joins, with its addresses asked for. */
export interface PodmanEndpoint {
  name: string;
  ipam: { IPv4Address?: string; IPv6Address?: string };
}

type InspectedNetworks = Dockerode.ContainerInspectInfo['NetworkSettings']['Networks'];

/**
 * The networks of Podman's that an inspected container is on, each with the addresses it holds now, for its
 * replacement to ask for: Podman 4.3 inspects every endpoint with `IPAMConfig: null`, so an address the container
 * was created with (`--ip`) cannot be told from one its network gave it, and NetworkMode reads `bridge` for any
 * of its networks. Undefined when the container is on none (none, host, container:). Throws FailedPrecondition
 * when it is on a network but holds no address there (not running: Podman released it), since its replacement
 * could then lose an address it was created with.
 */
export function podmanEndpoints(name: string, mode: string, networks: InspectedNetworks | null | undefined): PodmanEndpoint[] | undefined {
  if (mode !== 'bridge' && mode !== 'default' && mode !== '') return undefined;
  const entries = Object.entries(networks ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return undefined;
  return entries.map(([net, e]) => {
    const ipam: PodmanEndpoint['ipam'] = {};
    if (e.IPAddress) ipam.IPv4Address = e.IPAddress;
    if (e.GlobalIPv6Address) ipam.IPv6Address = e.GlobalIPv6Address;
    if (!ipam.IPv4Address && !ipam.IPv6Address) {
      throw new AgentError(
        'FailedPrecondition',
        `container "${name}" holds no address on Podman network "${net}" (it is not running), and Podman does not say which address it was created with, so a replacement could lose it: start the container first`,
      );
    }
    return { name: net, ipam };
  });
}
