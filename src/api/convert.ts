// Domain types <-> the agent API's wire types (proto/inplace/v1/agent.proto).
import type { Operation } from '../engine/operation.js';
import type { PodView } from '../engine/engine.js';
import type { PullEvent } from '../pull/types.js';
import type { Operation as WireOperation, Operation__Output as WireOperationOut } from '../gen/inplace/v1/Operation.js';
import type { Pod as WirePod } from '../gen/inplace/v1/Pod.js';
import type { PullImagesEvent, PullImagesEvent__Output } from '../gen/inplace/v1/PullImagesEvent.js';

/** A pod view as sent by ListPods. */
export function podToWire(v: PodView): WirePod {
  return {
    id: v.pod.id,
    name: v.pod.name,
    namespace: v.pod.namespace,
    uid: v.pod.uid,
    state: v.pod.state,
    ip: v.pod.ip,
    attempt: v.pod.attempt,
    createdAtUnixMs: String(v.pod.createdAt.getTime()),
    containers: v.containers.map((c) => ({
      id: c.id,
      name: c.name,
      image: c.image,
      imageId: c.imageId,
      state: c.state,
      attempt: c.attempt,
      createdAtUnixMs: String(c.createdAt.getTime()),
      startedAtUnixMs: String(c.startedAt?.getTime() ?? 0),
      exitCode: c.exitCode ?? 0,
    })),
  };
}

/** An operation record as sent by the API. */
export function operationToWire(op: Operation): WireOperation {
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
    cancelRequested: op.cancelRequested ?? false,
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
      hasExitCode: c.exitCode !== undefined,
      exitCode: c.exitCode ?? 0,
      rollbackId: c.rollbackId,
      downtimeMs: String(c.downtimeMs ?? 0),
    })),
  };
}

/** The client's view of a received operation: the same shape as the domain record. */
export function operationFromWire(w: WireOperationOut): Operation {
  return {
    id: w.id,
    podId: w.podId,
    podName: w.podName,
    podIp: w.podIp,
    state: w.state as Operation['state'],
    request: { pod: w.podName, containers: w.containers.map((c) => c.name), images: {}, graceSeconds: 0, minReadyMs: 0, timeoutMs: 0 },
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
    finishedAt: w.finishedAt || undefined,
    error: w.error || undefined,
    errorKind: w.errorKind || undefined,
    cancelRequested: w.cancelRequested,
    pulls: w.pulls.map((p) => ({ ...p, bytesDone: Number(p.bytesDone), bytesTotal: Number(p.bytesTotal) })),
    containers: w.containers.map((c) => ({
      name: c.name,
      oldId: c.oldId,
      newId: c.newId,
      oldRuntimeName: '',
      oldImage: c.oldImage,
      newImage: c.newImage,
      newAttempt: 0,
      rollbackId: c.rollbackId,
      step: c.step as Operation['containers'][number]['step'],
      steps: c.steps.map((s) => ({ step: s.step as Operation['containers'][number]['step'], at: s.at })),
      error: c.error || undefined,
      exitCode: c.hasExitCode ? c.exitCode : undefined,
      downtimeMs: Number(c.downtimeMs) || undefined,
    })),
  };
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
