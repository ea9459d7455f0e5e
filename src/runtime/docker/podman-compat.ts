// Where Podman's Docker Engine API (podman system service, 4.x) answers differently from dockerd, the shapes
// dockerd gives, so the rest of the adapter sees one engine. Each rule names what Podman sends.
import type Dockerode from 'dockerode';

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
