// Byte progress of one containerd pull, computed from what its lease holds (ingests in flight, committed
// content, unpack snapshots) and the content service's ingest statuses. Pure: fed snapshots, returns
// PullProgress.
import type { LayerProgress, PullProgress } from '../types.js';

/** An ingest status as containerd reports it (int64s as strings). */
export interface IngestStatus {
  ref: string;
  offset: string | number;
  total: string | number;
}

/** A lease resource (`ingests`, `content`, `snapshots/<snapshotter>`). */
export interface LeaseResource {
  id: string;
  type: string;
}

/** The digest an ingest ref names (`layer-sha256:<hex>` → `sha256:<hex>`), or the ref itself. */
export function digestOfRef(ref: string): string {
  const m = /(sha256:[a-f0-9]{64})$/.exec(ref);
  return m ? m[1] : ref;
}

/** Accumulates snapshots of one pull's lease into a PullProgress. */
export class LeaseProgress {
  private readonly blobs = new Map<string, LayerProgress>();

  /**
   * Takes one snapshot: the lease's resources and the namespace's ingest statuses. Ingests of the lease are
   * downloading; a blob that was an ingest and is now committed content is done; with no ingest left and an
   * unpack snapshot (`extract-…`) present, the pull is extracting.
   */
  update(resources: LeaseResource[], statuses: IngestStatus[]): PullProgress {
    const byRef = new Map(statuses.map((s) => [s.ref, s]));
    const active = new Set<string>();
    let unpacking = false;
    for (const r of resources) {
      if (r.type === 'ingests') active.add(r.id);
      else if (r.type.startsWith('snapshots/') && r.id.includes('extract-')) unpacking = true;
    }
    for (const ref of active) {
      const s = byRef.get(ref);
      const prev = this.blobs.get(ref);
      const total = Number(s?.total ?? 0) || prev?.total || 0;
      const current = Math.max(Number(s?.offset ?? 0), prev?.current ?? 0);
      this.blobs.set(ref, { id: digestOfRef(ref), status: 'downloading', current, total });
    }
    for (const [ref, b] of this.blobs) {
      // Gone from the ingests: committed (or, if the pull failed, abandoned; then nothing reads this again).
      if (!active.has(ref) && b.status !== 'done') this.blobs.set(ref, { ...b, status: 'done', current: b.total || b.current });
    }
    const layers = [...this.blobs.values()];
    return {
      layers,
      bytesDone: layers.reduce((a, l) => a + l.current, 0),
      bytesTotal: layers.reduce((a, l) => a + l.total, 0),
      extracting: active.size === 0 && unpacking,
    };
  }
}
