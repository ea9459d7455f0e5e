// Pods on plain Docker, from the container list alone (pure). A pod is a sandbox container that owns a network
// namespace plus the containers whose HostConfig.NetworkMode is `container:<sandbox id or name>`. A container
// with its own network that nobody joins is a pod of one: it is both the sandbox and the pod's only container.
// Podman's own pods are the same shape (the infra container owns the namespaces, the members join it) and take
// the pod's name when the engine says which containers are in one.
import type Dockerode from 'dockerode';
import type { Container, Pod } from '../types.js';
import { containerFromSummary, dockerName, splitLabels } from './convert.js';

/** Kubernetes labels a sandbox may carry (kubelet via dockershim / cri-dockerd). */
export const podNamespaceLabel = 'io.kubernetes.pod.namespace';
export const podNameLabel = 'io.kubernetes.pod.name';
export const podUidLabel = 'io.kubernetes.pod.uid';
/** cri-dockerd marks sandboxes `podsandbox`: such a container is never listed as a container of its pod. */
export const dockerTypeLabel = 'io.kubernetes.docker.type';

/** The container a NetworkMode joins (`container:<ref>` → ref); undefined when the container has its own. */
export function joinedContainer(networkMode: string | undefined | null): string | undefined {
  if (!networkMode?.startsWith('container:')) return undefined;
  const ref = networkMode.slice('container:'.length);
  return ref || undefined;
}

/** The pod's primary IP: the first non-empty IPAddress over the sandbox's networks, '' when there is none. */
export function podIp(networks: Record<string, { IPAddress?: string }> | null | undefined): string {
  for (const name of Object.keys(networks ?? {}).sort()) {
    const ip = networks?.[name]?.IPAddress;
    if (ip) return ip;
  }
  return '';
}

/** Identity of a pod from its sandbox: Kubernetes labels when present, else `docker/<sandbox name>`. */
export function podIdentity(
  sandboxId: string,
  sandboxName: string,
  labels: Record<string, string> | null | undefined,
): { name: string; namespace: string; uid: string } {
  const ns = labels?.[podNamespaceLabel];
  const name = labels?.[podNameLabel];
  if (ns && name) return { name: `${ns}/${name}`, namespace: ns, uid: labels?.[podUidLabel] || sandboxId };
  return { name: `docker/${dockerName(sandboxName)}`, namespace: 'docker', uid: sandboxId };
}

/** A pod the engine keeps itself (Podman's `podman pod create`): its name and id, by the id of its sandbox. */
export interface EnginePod {
  podId: string;
  podName: string;
  /** Whether the sandbox is the pod's infra container: then it only holds the namespaces, it is no container of the pod. */
  infra: boolean;
}

/** Identity of an engine's own pod: `podman/<pod name>`, its uid the engine's pod id. */
export function enginePodIdentity(p: EnginePod): { name: string; namespace: string; uid: string } {
  return { name: `podman/${p.podName}`, namespace: 'podman', uid: p.podId };
}

/** A pod from its sandbox's list entry (named after the engine's own pod when the sandbox is in one). */
export function podFromSandbox(s: Dockerode.ContainerInfo, enginePod?: EnginePod): Pod {
  const { labels, annotations } = splitLabels(s.Labels);
  return {
    id: s.Id,
    ...(enginePod ? enginePodIdentity(enginePod) : podIdentity(s.Id, s.Names?.[0] ?? '', s.Labels)),
    attempt: 0,
    state: s.State === 'running' ? 'ready' : 'notready',
    ip: podIp(s.NetworkSettings?.Networks),
    createdAt: new Date(s.Created * 1000),
    labels,
    annotations,
  };
}

/** A container list grouped into pods. */
export interface PodGroups {
  pods: Pod[];
  /** Every container that is not only a sandbox, with podId set. */
  containers: Container[];
}

/**
 * Resolves `container:<ref>` chains to the id of the container that owns the network namespace. A ref is a full
 * id (what Docker stores), a name, or an id prefix. A ref to a container that is gone resolves to the ref itself.
 */
export function sandboxResolver(list: readonly Dockerode.ContainerInfo[]): (c: Dockerode.ContainerInfo) => string {
  const byId = new Map(list.map((c) => [c.Id, c]));
  const byName = new Map<string, Dockerode.ContainerInfo>();
  for (const c of list) for (const n of c.Names ?? []) byName.set(dockerName(n), c);
  const find = (ref: string): Dockerode.ContainerInfo | undefined => {
    const hit = byId.get(ref) ?? byName.get(dockerName(ref));
    if (hit) return hit;
    const prefixed = list.filter((c) => c.Id.startsWith(ref));
    return prefixed.length === 1 ? prefixed[0] : undefined;
  };
  return (c) => {
    let current = c;
    for (let hops = 0; hops <= list.length; hops++) {
      const ref = joinedContainer(current.HostConfig?.NetworkMode);
      if (ref === undefined) return current.Id;
      const next = find(ref);
      if (!next) return ref;
      current = next;
    }
    return current.Id; // a cycle, which Docker does not allow: stop anywhere
  };
}

/**
 * Groups a container list (`all=true`) into pods and their containers. enginePods (by container id) names the
 * pods whose sandbox is in a pod of the engine's own; an infra container is never listed as a container.
 */
export function groupPods(list: readonly Dockerode.ContainerInfo[], enginePods: ReadonlyMap<string, EnginePod> = new Map()): PodGroups {
  const sandboxOf = sandboxResolver(list);
  const podIdOf = new Map(list.map((c) => [c.Id, sandboxOf(c)]));
  const joined = new Set<string>();
  for (const c of list) {
    const podId = podIdOf.get(c.Id);
    if (podId !== undefined && podId !== c.Id) joined.add(podId);
  }
  const pods: Pod[] = [];
  const containers: Container[] = [];
  for (const c of list) {
    const podId = podIdOf.get(c.Id) ?? c.Id;
    if (podId !== c.Id) {
      containers.push(containerFromSummary(c, podId));
      continue;
    }
    const enginePod = enginePods.get(c.Id);
    // A member of an engine's pod that owns its network (a pod without an infra container) keeps its own name.
    pods.push(podFromSandbox(c, enginePod?.infra ? enginePod : undefined));
    const sandboxOnly = joined.has(c.Id) || c.Labels?.[dockerTypeLabel] === 'podsandbox' || enginePod?.infra === true;
    if (!sandboxOnly) containers.push(containerFromSummary(c, c.Id));
  }
  return { pods, containers };
}
