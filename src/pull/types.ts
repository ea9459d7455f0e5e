// The image pull service's contract: what the API edge and the restart engine call.
import { MAX_TIMER_MS } from '../duration.js';
import type { ImagePuller } from '../engine/image-puller.js';
import type { LayerProgress, RegistryAuth } from '../runtime/types.js';

/** Phases an image goes through in a pull request. */
export type PullPhase = 'Queued' | 'Pulling' | 'Extracting' | 'Retrying' | 'Done' | 'Failed';

/** One progress report for one image. */
export interface PullEvent {
  image: string;
  phase: PullPhase;
  /**
   * 1-based position while Queued: first in the request's own `parallel` queue (when it has one), then in
   * the node-wide queue; 0 otherwise.
   */
  queuePosition: number;
  bytesDone: number;
  bytesTotal: number;
  layers: LayerProgress[];
  /** Resolved repo digest (`name@sha256:...`) once Done. */
  digest: string;
  imageId: string;
  /** Failure reason; never contains credentials. */
  error: string;
  errorKind: string;
  /** 1 for the first try, 2 for the first retry, ... */
  attempt: number;
  elapsedMs: number;
  pinned: boolean;
  alreadyPresent: boolean;
}

/** The part of a pull event every caller of one pull shares (the rest is per caller). */
export type FlightState = Omit<PullEvent, 'image' | 'elapsedMs' | 'pinned'>;

/** The longest timeout a timer can take (setTimeout's limit, ~24.8 days); longer ones are cut to it. */
export const MAX_PULL_TIMEOUT_MS = MAX_TIMER_MS;

/** A pull's state before anything happened, in the given phase. */
export function initialFlightState(phase: PullPhase): FlightState {
  return { phase, queuePosition: 0, bytesDone: 0, bytesTotal: 0, layers: [], digest: '', imageId: '', error: '', errorKind: '', attempt: 0, alreadyPresent: false };
}

/** Registry credentials by registry host, as read from a Docker config.json `auths` map. */
export type AuthKeyring = Map<string, RegistryAuth>;

/** A request to pull several images. */
export interface PullRequest {
  images: string[];
  /** At most this many of this request's images at once (the node-wide limit still applies). 0: no extra limit. */
  parallel?: number;
  /**
   * This request's deadline per image, ms, from getting the request's own `parallel` slot (the node-wide
   * queue included); the pull itself also ends at the service's timeout. 0 or absent: the service's only.
   */
  timeoutMs?: number;
  /** Credentials for this request only. */
  keyring?: AuthKeyring;
  /** Protect the pulled images from the kubelet's image GC where the runtime supports it. */
  pin?: boolean;
  /** Pull even if present. */
  always?: boolean;
}

/** The node's pull service: single flight per image, a node-wide FIFO limit, retries and deadlines. */
export interface PullService extends ImagePuller {
  /** Pulls every image of the request, reporting each change; resolves with each image's last event. */
  pull(req: PullRequest, onEvent: (e: PullEvent) => void, signal?: AbortSignal): Promise<PullEvent[]>;
}
