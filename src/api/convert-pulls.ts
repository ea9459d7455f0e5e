// Pull progress events <-> the agent API's wire types (PullImages): what the agent sends, and what a client prints.
import type { PullEvent } from '../pull/types.js';
import type { PullImagesEvent, PullImagesEvent__Output } from '../gen/inplace/v1/PullImagesEvent.js';

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
