// Domain types <-> the agent API's wire types (proto/inplace/v1/agent.proto).
import type { ContainerStep, ImagePull, Operation, OperationState, StepRecord } from '../engine/operation.js';
import { RefusalReasons } from '../engine/reasons.js';
import { ClientReasons, type ImagePullView, type OperationStateName, type StepName, type StepView } from './operation-states.js';
import type { PodView } from '../engine/engine.js';
import type { PullEvent } from '../pull/types.js';
import type { Operation as WireOperation, Operation__Output as WireOperationOut } from '../gen/inplace/v1/Operation.js';
import type { Pod as WirePod } from '../gen/inplace/v1/Pod.js';
import type { ListPodsResponse__Output } from '../gen/inplace/v1/ListPodsResponse.js';
import type { PullImagesEvent, PullImagesEvent__Output } from '../gen/inplace/v1/PullImagesEvent.js';
import type { RestartSettings__Output } from '../gen/inplace/v1/RestartSettings.js';

/** Holds when A and B are the same type (a compile-time check). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
// The engine sends exactly what clients read: its states, steps, step records and pulls are the API's.
const _wireMatches: [Same<OperationState, OperationStateName>, Same<ContainerStep, StepName>, Same<StepRecord, StepView>, Same<ImagePull, ImagePullView>] = [true, true, true, true];
const _reasonsMatch: typeof ClientReasons.InvalidPreStopHook = RefusalReasons.InvalidPreStopHook;

/** A pod view as sent by ListPods: containers by name (then newest attempt first), the exit code only once exited. */
export function podToWire(v: PodView): WirePod {
  const containers = [...v.containers].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : b.attempt - a.attempt));
  return {
    id: v.pod.id,
    name: v.pod.name,
    namespace: v.pod.namespace,
    uid: v.pod.uid,
    state: v.pod.state,
    ip: v.pod.ip,
    attempt: v.pod.attempt,
    createdAtUnixMs: String(v.pod.createdAt.getTime()),
    containers: containers.map((c) => ({
      id: c.id,
      name: c.name,
      image: c.image,
      imageId: c.imageId,
      state: c.state,
      attempt: c.attempt,
      createdAtUnixMs: String(c.createdAt.getTime()),
      startedAtUnixMs: String(c.startedAt?.getTime() ?? 0),
      ...(c.exitCode !== undefined ? { exitCode: c.exitCode } : {}),
    })),
  };
}

/** A container as a client sees it: times in RFC 3339, startedAt once started, exitCode once exited. */
export interface PodContainerView {
  id: string;
  name: string;
  image: string;
  imageId: string;
  state: string;
  attempt: number;
  createdAt: string;
  startedAt?: string;
  exitCode?: number;
}

/** A pod as a client sees it (what `inplacectl pods` prints, `-o json` included). */
export interface PodItemView {
  id: string;
  name: string;
  namespace: string;
  uid: string;
  state: string;
  /** Absent when the pod has no IP of its own. */
  ip?: string;
  attempt: number;
  createdAt: string;
  containers: PodContainerView[];
}

/** ListPods as a client sees it. */
export interface PodListView {
  runtime: string;
  pods: PodItemView[];
}

/** Unix ms on the wire (a decimal string) as an RFC 3339 time; undefined for 0 (not known). */
function rfc3339(ms: string | number): string | undefined {
  const n = Number(ms);
  return n > 0 ? new Date(n).toISOString() : undefined;
}

/** The client's view of ListPods: nothing filled in, containers by name. */
export function podsFromWire(w: ListPodsResponse__Output): PodListView {
  return {
    runtime: w.runtime,
    pods: w.pods.map((p) => {
      const pod: PodItemView = { id: p.id, name: p.name, namespace: p.namespace, uid: p.uid, state: p.state, attempt: p.attempt, createdAt: rfc3339(p.createdAtUnixMs) ?? '', containers: [] };
      if (p.ip) pod.ip = p.ip;
      else delete pod.ip;
      pod.containers = p.containers
        .map((c) => {
          const v: PodContainerView = { id: c.id, name: c.name, image: c.image, imageId: c.imageId, state: c.state, attempt: c.attempt, createdAt: rfc3339(c.createdAtUnixMs) ?? '' };
          const started = rfc3339(c.startedAtUnixMs);
          if (started) v.startedAt = started;
          if (c.exitCode !== undefined && c.exitCode !== null) v.exitCode = c.exitCode;
          return v;
        })
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : b.attempt - a.attempt));
      return pod;
    }),
  };
}

/** Restart settings as a client sees them: a field is present only when it was given or applies. */
export interface SettingsView {
  graceSeconds?: number;
  minReadyMs?: number;
  timeoutMs?: number;
  skipPreStop?: boolean;
}

/** One container of an operation as a client sees it. */
export interface ContainerView {
  name: string;
  oldId: string;
  /** Absent until the replacement is created. */
  newId?: string;
  oldImage: string;
  newImage: string;
  step: StepName;
  steps: StepView[];
  error?: string;
  reason?: string;
  exitCode?: number;
  /** Absent unless the old config was started again. */
  rollbackId?: string;
  /** Absent until the replacement started. */
  downtimeMs?: number;
  /** Kubernetes mode: what clients behind the pod's Services saw. */
  traffic?: string;
  /** Kubernetes mode: longest time a Service of the pod had no ready endpoint (absent: it always had one). */
  unservedMs?: number;
}

/** An operation as a client sees it (what inplacectl prints, `-o json` included). */
export interface OperationView {
  /** Empty for a dry run, which records nothing. */
  id: string;
  podId: string;
  podName: string;
  /** The pod's IP when the operation began ('' when it has none). */
  podIp: string;
  state: OperationStateName;
  /** What the caller set (absent fields took the agent's defaults). */
  requested: SettingsView;
  /** What the operation runs with. */
  applied: SettingsView;
  containers: ContainerView[];
  pulls: ImagePullView[];
  createdAt: string;
  updatedAt: string;
  finishedAt?: string;
  error?: string;
  errorKind?: string;
  reason?: string;
  cancelRequested?: boolean;
  /** The pod read again after success; absent otherwise, or when it could not be read. */
  podAfter?: { podId: string; podIp: string };
}

/** An operation record as sent by the API. */
export function operationToWire(op: Operation): WireOperation {
  const req = op.requested ?? {};
  return {
    id: op.id,
    podId: op.podId,
    podName: op.podName,
    podIp: op.podIp,
    state: op.state,
    createdAt: op.createdAt,
    updatedAt: op.updatedAt,
    finishedAt: op.finishedAt ?? '',
    error: op.error ?? '',
    errorKind: op.errorKind ?? '',
    reason: op.reason ?? '',
    cancelRequested: op.cancelRequested ?? false,
    requested: {
      graceSeconds: req.graceSeconds,
      minReadyMs: req.minReadyMs === undefined ? undefined : String(req.minReadyMs),
      timeoutMs: req.timeoutMs === undefined ? undefined : String(req.timeoutMs),
      skipPreStop: op.request.skipPreStop ?? false,
    },
    applied: {
      graceSeconds: op.request.graceSeconds,
      minReadyMs: String(op.request.minReadyMs),
      timeoutMs: String(op.request.timeoutMs),
      skipPreStop: op.request.skipPreStop ?? false,
    },
    podAfter: op.podAfter ?? null,
    pulls: (op.pulls ?? []).map((p) => ({ ...p, bytesDone: String(p.bytesDone), bytesTotal: String(p.bytesTotal) })),
    containers: op.containers.map((c) => ({
      name: c.name,
      oldId: c.oldId,
      newId: c.newId,
      oldImage: c.oldImage,
      newImage: c.newImage,
      step: c.step,
      steps: c.steps,
      error: c.error ?? '',
      reason: c.reason ?? '',
      hasExitCode: c.exitCode !== undefined,
      exitCode: c.exitCode ?? 0,
      rollbackId: c.rollbackId,
      downtimeMs: String(c.downtimeMs ?? 0),
      traffic: c.traffic ?? '',
      ...(c.unservedMs !== undefined ? { unservedMs: String(c.unservedMs) } : {}),
    })),
  };
}

function settingsFromWire(w: RestartSettings__Output | null): SettingsView {
  const out: SettingsView = {};
  if (!w) return out;
  if (w.graceSeconds !== undefined) out.graceSeconds = w.graceSeconds;
  if (w.minReadyMs !== undefined) out.minReadyMs = Number(w.minReadyMs);
  if (w.timeoutMs !== undefined) out.timeoutMs = Number(w.timeoutMs);
  if (w.skipPreStop) out.skipPreStop = true;
  return out;
}

/** The client's view of a received operation: only what was sent, nothing filled in. */
export function operationFromWire(w: WireOperationOut): OperationView {
  const view: OperationView = {
    id: w.id,
    podId: w.podId,
    podName: w.podName,
    podIp: w.podIp,
    state: w.state as OperationStateName,
    requested: settingsFromWire(w.requested),
    applied: settingsFromWire(w.applied),
    containers: w.containers.map((c) => {
      const v: ContainerView = {
        name: c.name,
        oldId: c.oldId,
        oldImage: c.oldImage,
        newImage: c.newImage,
        step: c.step,
        steps: c.steps.map((s) => ({ step: s.step, at: s.at, ...(s.detail ? { detail: s.detail } : {}) })),
      };
      if (c.newId) v.newId = c.newId;
      if (c.error) v.error = c.error;
      if (c.reason) v.reason = c.reason;
      if (c.hasExitCode) v.exitCode = c.exitCode;
      if (c.rollbackId) v.rollbackId = c.rollbackId;
      if (Number(c.downtimeMs) > 0) v.downtimeMs = Number(c.downtimeMs);
      if (c.traffic) v.traffic = c.traffic;
      if (c.unservedMs !== undefined && c.unservedMs !== null) v.unservedMs = Number(c.unservedMs);
      return v;
    }),
    pulls: w.pulls.map((p) => ({ ...p, bytesDone: Number(p.bytesDone), bytesTotal: Number(p.bytesTotal) })),
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
  };
  if (w.finishedAt) view.finishedAt = w.finishedAt;
  if (w.error) view.error = w.error;
  if (w.errorKind) view.errorKind = w.errorKind;
  if (w.reason) view.reason = w.reason;
  if (w.cancelRequested) view.cancelRequested = true;
  if (w.podAfter) view.podAfter = { podId: w.podAfter.podId, podIp: w.podAfter.podIp };
  return view;
}

/** A pull progress event as sent by PullImages. */
export function pullEventToWire(e: PullEvent): PullImagesEvent {
  return {
    ...e,
    bytesDone: String(e.bytesDone),
    bytesTotal: String(e.bytesTotal),
    elapsedMs: String(e.elapsedMs),
    layers: e.layers.map((l) => ({ ...l, current: String(l.current), total: String(l.total) })),
  };
}

/**
 * A pull event as a client prints it with `-o json`: only what is known. A byte total, layers, a digest, an
 * image id, an error or a queue position that the agent did not have (sent as 0 or empty) are left out.
 */
export function pullEventView(e: PullEvent, pinRequested: boolean): Record<string, unknown> {
  const v: Record<string, unknown> = { image: e.image, phase: e.phase };
  if (e.queuePosition > 0) v.queuePosition = e.queuePosition;
  if (e.phase !== 'Queued') v.bytesDone = e.bytesDone;
  if (e.bytesTotal > 0) v.bytesTotal = e.bytesTotal;
  // A layer's total is 0 until the runtime knows it: unknown, so left out rather than said to be 0.
  if (e.layers.length > 0) v.layers = e.layers.map((l) => (l.total > 0 ? l : { id: l.id, status: l.status, current: l.current }));
  if (e.digest) v.digest = e.digest;
  if (e.imageId) v.imageId = e.imageId;
  if (e.error) v.error = e.error;
  if (e.errorKind) v.errorKind = e.errorKind;
  if (e.attempt > 0) v.attempt = e.attempt;
  v.elapsedMs = e.elapsedMs;
  if (e.phase === 'Done') {
    v.alreadyPresent = e.alreadyPresent;
    if (pinRequested || e.pinned) v.pinned = e.pinned;
  }
  return v;
}

/** A received pull progress event in domain form. */
export function pullEventFromWire(w: PullImagesEvent__Output): PullEvent {
  return {
    image: w.image,
    phase: w.phase as PullEvent['phase'],
    queuePosition: w.queuePosition,
    bytesDone: Number(w.bytesDone),
    bytesTotal: Number(w.bytesTotal),
    layers: w.layers.map((l) => ({ id: l.id, status: l.status, current: Number(l.current), total: Number(l.total) })),
    digest: w.digest,
    imageId: w.imageId,
    error: w.error,
    errorKind: w.errorKind,
    attempt: w.attempt,
    elapsedMs: Number(w.elapsedMs),
    pinned: w.pinned,
    alreadyPresent: w.alreadyPresent,
  };
}
