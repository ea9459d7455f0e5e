// Domain types <-> the agent API's wire types (proto/inplace/v1/agent.proto): operations here, pods in
// convert-pods.ts, pull events in convert-pulls.ts.
import type { ContainerStep, ImagePull, Operation, OperationState, StepRecord } from '../engine/operation.js';
import { RefusalReasons } from '../engine/reasons.js';
import { ClientReasons, type ImagePullView, type OperationStateName, type StepName, type StepView } from './operation-states.js';
import type { Operation as WireOperation, Operation__Output as WireOperationOut } from '../gen/inplace/v1/Operation.js';
import type { RestartSettings__Output } from '../gen/inplace/v1/RestartSettings.js';

/** Holds when A and B are the same type (a compile-time check). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
// The engine sends exactly what clients read: its states, steps, step records and pulls are the API's.
const _wireMatches: [Same<OperationState, OperationStateName>, Same<ContainerStep, StepName>, Same<StepRecord, StepView>, Same<ImagePull, ImagePullView>] = [true, true, true, true];
const _reasonsMatch: typeof ClientReasons.InvalidPreStopHook = RefusalReasons.InvalidPreStopHook;

export { podToWire, podsFromWire, type PodContainerView, type PodItemView, type PodListView } from './convert-pods.js';
export { pullEventFromWire, pullEventToWire, pullEventView } from './convert-pulls.js';

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
