// Docker Engine API JSON (container inspect/list, image inspect/list, events) → the agent's domain types.
import type Dockerode from 'dockerode';
import type {
  Container,
  ContainerDetail,
  ContainerSpec,
  ContainerState,
  Image,
  Mount,
  RuntimeEvent,
} from '../types.js';

/** Label holding a container's name in its pod (Kubernetes / cri-dockerd convention). */
const containerNameLabel = 'io.kubernetes.container.name';
/** Prefix under which annotations are stored as labels (dockershim / cri-dockerd convention). */
export const annotationLabelPrefix = 'annotation.';

/** A mount as both inspect and list report it. */
export type DockerMount = Dockerode.ContainerInspectInfo['Mounts'][number];

/** A Docker timestamp as a Date; undefined for the zero time Docker uses for "never" and for bad input. */
export function dockerDate(s: string | undefined | null): Date | undefined {
  if (!s || s.startsWith('0001-01-01')) return undefined;
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** Docker's container status word as a ContainerState. */
export function containerState(status: string | undefined): ContainerState {
  switch (status) {
    case 'created':
      return 'created';
    case 'running':
    case 'paused':
    case 'restarting':
      return 'running';
    case 'exited':
    case 'stopped': // Podman's word for an exited container
    case 'dead':
    case 'removing':
      return 'exited';
    default:
      return 'unknown';
  }
}

/** The container name without Docker's leading '/'. */
export function dockerName(name: string | undefined): string {
  return (name ?? '').replace(/^\//, '');
}

/** Name in the pod: the `io.kubernetes.container.name` label when present, else the Docker name. */
export function containerNameInPod(labels: Record<string, string> | null | undefined, name: string): string {
  return labels?.[containerNameLabel] || dockerName(name);
}

/** Splits Docker labels into plain labels and annotations (labels prefixed `annotation.`). */
export function splitLabels(all: Record<string, string> | null | undefined): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const labels: Record<string, string> = {};
  const annotations: Record<string, string> = {};
  for (const [k, v] of Object.entries(all ?? {})) {
    if (k.startsWith(annotationLabelPrefix)) annotations[k.slice(annotationLabelPrefix.length)] = v;
    else labels[k] = v;
  }
  return { labels, annotations };
}

/** The inverse of splitLabels: one Docker label map. */
export function joinLabels(labels: Record<string, string>, annotations: Record<string, string>): Record<string, string> {
  const all: Record<string, string> = { ...labels };
  for (const [k, v] of Object.entries(annotations)) all[annotationLabelPrefix + k] = v;
  return all;
}

/** Docker mounts as domain mounts; a volume's source is its name (anonymous volumes have a generated name). */
export function mountsFromDocker(mounts: readonly DockerMount[] | null | undefined): Mount[] {
  return (mounts ?? []).map((m) => ({
    source: m.Type === 'volume' ? (m.Name ?? m.Source) : m.Source,
    containerPath: m.Destination,
    readonly: !m.RW,
    type: m.Type === 'bind' || m.Type === 'volume' || m.Type === 'tmpfs' ? m.Type : 'other',
  }));
}

/** `KEY=VALUE` strings as key/value pairs (a bare `KEY` has the empty value). */
export function envFromDocker(env: readonly string[] | null | undefined): { key: string; value: string }[] {
  return (env ?? []).map((e) => {
    const i = e.indexOf('=');
    return i < 0 ? { key: e, value: '' } : { key: e.slice(0, i), value: e.slice(i + 1) };
  });
}

/** Key/value pairs as Docker `KEY=VALUE` strings. */
export function envToDocker(env: readonly { key: string; value: string }[]): string[] {
  return env.map((e) => `${e.key}=${e.value}`);
}

/** Docker's entrypoint (array, string or null) as an argv array. */
export function argvFromDocker(v: string | string[] | null | undefined): string[] {
  if (v === null || v === undefined) return [];
  return typeof v === 'string' ? [v] : [...v];
}

/** kubelet-style reason of an exited container. */
function exitReason(state: Dockerode.ContainerInspectInfo['State']): string | undefined {
  if (containerState(state.Status) !== 'exited' || state.Status === 'removing') return undefined;
  if (state.OOMKilled) return 'OOMKilled';
  if (state.Error) return 'ContainerCannotRun';
  return state.ExitCode === 0 ? 'Completed' : 'Error';
}

/** The config a container was created from, as a spec; `native` is the whole inspect JSON. */
export function specFromInspect(info: Dockerode.ContainerInspectInfo): ContainerSpec {
  const { labels, annotations } = splitLabels(info.Config.Labels);
  return {
    name: containerNameInPod(info.Config.Labels, info.Name),
    image: info.Config.Image,
    command: argvFromDocker(info.Config.Entrypoint),
    args: argvFromDocker(info.Config.Cmd),
    env: envFromDocker(info.Config.Env),
    workingDir: info.Config.WorkingDir ?? '',
    labels,
    annotations,
    mounts: mountsFromDocker(info.Mounts),
    attempt: 0,
    native: info,
  };
}

/** A container from its inspect JSON, in the pod whose sandbox id is podId. */
export function containerFromInspect(info: Dockerode.ContainerInspectInfo, podId: string): ContainerDetail {
  const { labels, annotations } = splitLabels(info.Config.Labels);
  const state = containerState(info.State.Status);
  const detail: ContainerDetail = {
    id: info.Id,
    name: containerNameInPod(info.Config.Labels, info.Name),
    podId,
    attempt: 0,
    runtimeName: dockerName(info.Name),
    image: info.Config.Image,
    imageId: info.Image,
    state,
    createdAt: dockerDate(info.Created) ?? new Date(0),
    labels,
    annotations,
    mounts: mountsFromDocker(info.Mounts),
    spec: specFromInspect(info),
  };
  const startedAt = dockerDate(info.State.StartedAt);
  const finishedAt = dockerDate(info.State.FinishedAt);
  if (startedAt) detail.startedAt = startedAt;
  if (finishedAt) detail.finishedAt = finishedAt;
  if (state === 'exited' || info.State.Restarting) detail.exitCode = info.State.ExitCode;
  if (info.RestartCount > 0) detail.restartCount = info.RestartCount;
  const reason = exitReason(info.State);
  if (reason) detail.reason = reason;
  return detail;
}

/**
 * A container from its list entry, in the pod whose sandbox id is podId. The list carries no start or finish
 * time and no exit code: inspect the container for those.
 */
export function containerFromSummary(s: Dockerode.ContainerInfo, podId: string): Container {
  const { labels, annotations } = splitLabels(s.Labels);
  return {
    id: s.Id,
    name: containerNameInPod(s.Labels, s.Names?.[0] ?? ''),
    podId,
    attempt: 0,
    runtimeName: dockerName(s.Names?.[0]),
    image: s.Image,
    imageId: s.ImageID,
    state: containerState(s.State),
    createdAt: new Date(s.Created * 1000),
    labels,
    annotations,
    mounts: mountsFromDocker(s.Mounts as DockerMount[]),
  };
}

/** Tags without Docker's `<none>:<none>` placeholder. */
function realTags(tags: readonly string[] | null | undefined): string[] {
  return (tags ?? []).filter((t) => !t.startsWith('<none>'));
}

/** The fields an image's inspect JSON and its list entry share. */
type ImageFields = { Id: string; RepoTags?: readonly string[] | null; RepoDigests?: readonly string[] | null; Size: number };

/** An image from its inspect JSON or its list entry. Docker has no pinning: pinned is always false. */
export function imageFromDocker(info: ImageFields): Image {
  return {
    id: info.Id,
    repoTags: realTags(info.RepoTags),
    repoDigests: realTags(info.RepoDigests),
    size: info.Size,
    pinned: false,
  };
}

/** A Docker event message (the subset the adapter reads). */
export interface DockerEventMessage {
  Type?: string;
  Action?: string;
  status?: string;
  id?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
  time?: number;
  timeNano?: number;
}

/** The RuntimeEvent type of a Docker container action; undefined for actions the agent does not report. */
export function eventType(action: string | undefined): RuntimeEvent['type'] | undefined {
  switch (action) {
    case 'create':
      return 'created';
    case 'start':
      return 'started';
    case 'die':
      return 'stopped';
    case 'destroy':
    case 'remove': // Podman's name for destroy
      return 'deleted';
    default:
      return undefined;
  }
}

/** The instant of an event (timeNano when present, else time in seconds). */
export function eventTime(msg: DockerEventMessage): Date {
  if (typeof msg.timeNano === 'number') return new Date(Math.floor(msg.timeNano / 1e6));
  return new Date((msg.time ?? 0) * 1000);
}
