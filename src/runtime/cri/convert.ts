// CRI wire objects (as @grpc/proto-loader decodes them: camelCase, int64 as strings, enums by name) to the
// agent's domain types. Nanosecond timestamps go through BigInt, never through a lossy number.
import type { ContainerConfig } from '../../gen/runtime/v1/ContainerConfig.js';
import type { ContainerEventResponse__Output } from '../../gen/runtime/v1/ContainerEventResponse.js';
import type { ContainerStatus__Output } from '../../gen/runtime/v1/ContainerStatus.js';
import type { Container__Output } from '../../gen/runtime/v1/Container.js';
import type { Image__Output } from '../../gen/runtime/v1/Image.js';
import type { Mount__Output, Mount as CriMount } from '../../gen/runtime/v1/Mount.js';
import type { PodSandboxConfig } from '../../gen/runtime/v1/PodSandboxConfig.js';
import type { PodSandboxStatus__Output } from '../../gen/runtime/v1/PodSandboxStatus.js';
import type { PodSandbox__Output } from '../../gen/runtime/v1/PodSandbox.js';
import type {
  Container,
  ContainerSpec,
  ContainerState,
  Image,
  Mount,
  Pod,
  RuntimeEvent,
} from '../types.js';

/** What the CRI adapter keeps in ContainerSpec.native: the configs CreateContainer needs again. JSON-safe. */
export interface CriNative {
  kind: 'cri';
  /** Sandbox the container was created in; its sandboxConfig belongs to this sandbox. */
  podId: string;
  containerConfig: ContainerConfig;
  sandboxConfig: PodSandboxConfig;
}

/** Whether a ContainerSpec.native value came from the CRI adapter. */
export function isCriNative(v: unknown): v is CriNative {
  const n = v as Partial<CriNative> | null;
  return typeof n === 'object' && n !== null && n.kind === 'cri' && typeof n.podId === 'string' &&
    typeof n.containerConfig === 'object' && typeof n.sandboxConfig === 'object';
}

/** A Date from CRI nanoseconds since the epoch (a decimal string); undefined for 0 or empty. */
export function nanosToDate(ns: string | number | undefined | null): Date | undefined {
  if (ns === undefined || ns === null || ns === '' || ns === '0' || ns === 0) return undefined;
  return new Date(Number(BigInt(ns) / 1_000_000n));
}

/** Like nanosToDate, but the epoch for a missing value (for fields that must be set). */
export function nanosToDateOrEpoch(ns: string | number | undefined | null): Date {
  return nanosToDate(ns) ?? new Date(0);
}

const STATES: Record<string, ContainerState> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

/** The domain state of a CRI container state. */
export function toContainerState(state: string | number): ContainerState {
  return STATES[String(state)] ?? 'unknown';
}

/** A pod from a sandbox list item or status; ip comes from PodSandboxStatus only. */
export function toPod(s: PodSandbox__Output | PodSandboxStatus__Output, ip = ''): Pod {
  const md = s.metadata;
  const namespace = md?.namespace ?? '';
  return {
    id: s.id,
    name: `${namespace}/${md?.name ?? ''}`,
    namespace,
    uid: md?.uid ?? '',
    attempt: md?.attempt ?? 0,
    state: s.state === 'SANDBOX_READY' ? 'ready' : 'notready',
    ip,
    createdAt: nanosToDateOrEpoch(s.createdAt),
    labels: { ...s.labels },
    annotations: { ...s.annotations },
  };
}

/** Domain mounts of CRI mounts (host path binds). */
export function toMounts(mounts: (Mount__Output | CriMount)[] | undefined): Mount[] {
  return (mounts ?? []).map((m) => ({
    source: m.hostPath ?? '',
    containerPath: m.containerPath ?? '',
    readonly: m.readonly ?? false,
    type: 'bind' as const,
  }));
}

/**
 * A container from its ListContainers item alone (ContainerFilter.brief): its image as the container was
 * created with it, and nothing that only the status carries (times but the creation's, exit code, mounts).
 */
export function toContainerFromListItem(c: Container__Output): Container {
  return {
    id: c.id,
    name: c.metadata?.name ?? '',
    podId: c.podSandboxId,
    attempt: c.metadata?.attempt ?? 0,
    runtimeName: '',
    image: c.image?.image ?? '',
    imageId: c.imageId || c.imageRef,
    state: toContainerState(c.state),
    createdAt: nanosToDateOrEpoch(c.createdAt),
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    mounts: [],
  };
}

/**
 * A container from its ContainerStatus, with the pod id and image id that only ListContainers or the
 * verbose info carry. containerd reports the image's first tag as status.image and a repo digest as
 * status.imageRef; the list item's imageRef is the image id.
 */
export function toContainerFromStatus(s: ContainerStatus__Output, podId: string, listItem?: Container__Output): Container {
  const exited = toContainerState(s.state) === 'exited';
  return {
    id: s.id,
    name: s.metadata?.name ?? '',
    podId,
    attempt: s.metadata?.attempt ?? 0,
    runtimeName: '',
    image: s.image?.image || listItem?.image?.image || '',
    imageId: s.imageId || listItem?.imageId || listItem?.imageRef || s.imageRef,
    state: toContainerState(s.state),
    createdAt: nanosToDateOrEpoch(s.createdAt),
    startedAt: nanosToDate(s.startedAt),
    finishedAt: nanosToDate(s.finishedAt),
    exitCode: exited ? s.exitCode : undefined,
    reason: s.reason || undefined,
    labels: { ...s.labels },
    annotations: { ...s.annotations },
    mounts: toMounts(s.mounts),
  };
}

/** The domain spec of a container created from `config` in sandbox `podId` with `sandboxConfig`. */
export function toContainerSpec(config: ContainerConfig, sandboxConfig: PodSandboxConfig, podId: string): ContainerSpec {
  const native: CriNative = { kind: 'cri', podId, containerConfig: config, sandboxConfig };
  return {
    name: config.metadata?.name ?? '',
    image: config.image?.image ?? '',
    command: [...(config.command ?? [])],
    args: [...(config.args ?? [])],
    env: (config.envs ?? []).map((e) => ({ key: e.key ?? '', value: e.value ?? '' })),
    workingDir: config.workingDir ?? '',
    labels: { ...config.labels },
    annotations: { ...config.annotations },
    mounts: toMounts(config.mounts),
    attempt: config.metadata?.attempt ?? 0,
    native,
  };
}

/**
 * The ContainerConfig to create `spec` with: the native config with the spec's name, attempt, image,
 * command, args, env, working dir, labels and annotations applied. Mounts, devices, resources, security
 * context and everything else come from the native config unchanged. A kubelet-style log path
 * (`<name>/<attempt>.log`) and kubelet's restartCount annotation follow the new attempt, so two instances
 * never share a log file and kubelet's own next attempt does not collide with ours.
 */
export function toContainerConfig(spec: ContainerSpec, native: CriNative): ContainerConfig {
  const base = native.containerConfig;
  const image = base.image?.image === spec.image ? base.image : { ...base.image, image: spec.image, userSpecifiedImage: spec.image, imageRef: '' };
  return {
    ...base,
    metadata: { name: spec.name, attempt: spec.attempt },
    image,
    command: [...spec.command],
    args: [...spec.args],
    envs: spec.env.map((e) => ({ key: e.key, value: e.value })),
    workingDir: spec.workingDir,
    labels: { ...spec.labels },
    annotations: withRestartCount(spec.annotations, spec.attempt),
    logPath: attemptLogPath(base.logPath ?? '', spec.attempt),
  };
}

/** kubelet's annotation holding a container's attempt; it derives its next attempt from it. */
export const RESTART_COUNT_ANNOTATION = 'io.kubernetes.container.restartCount';

/**
 * Annotations with kubelet's restart count, where present, set to the new attempt: kubelet creates its next
 * container with attempt restartCount + 1, which must not collide with (name, attempt) of ours.
 */
function withRestartCount(annotations: Record<string, string>, attempt: number): Record<string, string> {
  const out = { ...annotations };
  if (RESTART_COUNT_ANNOTATION in out) out[RESTART_COUNT_ANNOTATION] = String(attempt);
  return out;
}

/** Replaces the attempt number of a `<dir>/<n>.log` log path; other paths are kept. */
export function attemptLogPath(logPath: string, attempt: number): string {
  const m = /^(.*\/)?\d+\.log$/.exec(logPath);
  return m ? `${m[1] ?? ''}${attempt}.log` : logPath;
}

/** An image from the CRI image list or status. */
export function toImage(i: Image__Output): Image {
  return {
    id: i.id,
    repoTags: [...i.repoTags],
    repoDigests: [...i.repoDigests],
    size: Number(i.size),
    pinned: i.pinned,
  };
}

const EVENT_TYPES: Record<string, RuntimeEvent['type']> = {
  CONTAINER_CREATED_EVENT: 'created',
  CONTAINER_STARTED_EVENT: 'started',
  CONTAINER_STOPPED_EVENT: 'stopped',
  CONTAINER_DELETED_EVENT: 'deleted',
};

/** A domain event of a CRI container event; undefined for types we do not know. */
export function toRuntimeEvent(ev: ContainerEventResponse__Output): RuntimeEvent | undefined {
  const type = EVENT_TYPES[String(ev.containerEventType)];
  if (!type) return undefined;
  return {
    type,
    containerId: ev.containerId,
    podId: ev.podSandboxStatus?.id ?? '',
    at: nanosToDateOrEpoch(ev.createdAt),
  };
}
