// Folds Docker's pull progress stream (one JSON message per line) into PullProgress snapshots (pure).
import { AgentError } from '../../errors.js';
import type { LayerProgress, PullProgress } from '../types.js';

/** One message of `POST /images/create`'s stream. */
export interface DockerPullMessage {
  id?: string;
  status?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { code?: number; message?: string };
}

/** Docker's per-layer status words → the agent's layer status. */
const layerStatus: Record<string, string> = {
  'Pulling fs layer': 'waiting',
  Waiting: 'waiting',
  Downloading: 'downloading',
  'Verifying Checksum': 'downloaded',
  'Download complete': 'downloaded',
  Extracting: 'extracting',
  'Pull complete': 'done',
  'Already exists': 'exists',
};

/** Tracks the layers of one pull. */
export class PullTracker {
  private readonly layers = new Map<string, LayerProgress>();
  /** `sha256:...` from the stream's `Digest:` line, '' until seen. */
  digest = '';
  /** Whether the daemon's closing `Status:` line was seen (a stream that ends without it was cut). */
  finished = false;
  /** The last message with an id (Podman closes with `Download complete` for the image's own id). */
  last: { status: string; id: string } | undefined;

  /** Applies one message; returns whether the progress snapshot changed. Throws the stream's error. */
  apply(msg: DockerPullMessage, ref: string): boolean {
    if (msg.error !== undefined || msg.errorDetail !== undefined) throw pullStreamError(msg, ref);
    const status = msg.status ?? '';
    if (status.startsWith('Digest: ')) {
      this.digest = status.slice('Digest: '.length).trim();
      return false;
    }
    if (status.startsWith('Status: ')) {
      this.finished = true;
      return false;
    }
    if (!msg.id) return false;
    this.last = { status, id: msg.id };
    const mapped = layerStatus[status] ?? (status.startsWith('Retrying') ? 'retrying' : undefined);
    if (mapped === undefined) return false;
    const layer = this.layers.get(msg.id) ?? { id: msg.id, status: mapped, current: 0, total: 0 };
    layer.status = mapped;
    if (mapped === 'downloading') {
      layer.current = msg.progressDetail?.current ?? layer.current;
      layer.total = msg.progressDetail?.total ?? layer.total;
    } else if (mapped === 'downloaded' || mapped === 'extracting' || mapped === 'done') {
      // Extraction reports its own byte counts; the download bytes are complete by then.
      if (layer.total === 0 && mapped === 'extracting') layer.total = msg.progressDetail?.total ?? 0;
      layer.current = layer.total;
    }
    this.layers.set(msg.id, layer);
    return true;
  }

  /** The current snapshot. */
  snapshot(): PullProgress {
    const layers = [...this.layers.values()].map((l) => ({ ...l }));
    return {
      layers,
      bytesDone: layers.reduce((n, l) => n + l.current, 0),
      bytesTotal: layers.reduce((n, l) => n + l.total, 0),
      extracting: layers.some((l) => l.status === 'extracting'),
    };
  }
}

/**
 * The AgentError for an error message inside the pull stream. The stream carries no HTTP status, so the kind
 * comes from errorDetail.code when it is one, else from the registry error codes of the distribution spec that
 * Docker passes through (MANIFEST_UNKNOWN / NAME_UNKNOWN → NotFound, UNAUTHORIZED / DENIED → Unauthenticated).
 */
export function pullStreamError(msg: DockerPullMessage, ref: string): AgentError {
  const text = msg.errorDetail?.message ?? msg.error ?? 'unknown error';
  const code = msg.errorDetail?.code;
  const message = `pull of image "${ref}" failed: ${text}`;
  if (code === 404 || /manifest unknown|name unknown|not found/i.test(text)) {
    return new AgentError('NotFound', `image "${ref}" not found: ${text}`);
  }
  if (code === 401 || code === 403 || /unauthorized|denied|authentication required/i.test(text)) {
    return new AgentError('Unauthenticated', `image "${ref}": not authorized: ${text}`);
  }
  return new AgentError('Internal', message);
}
