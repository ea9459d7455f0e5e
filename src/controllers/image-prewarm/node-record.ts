// This node's NodePrewarm object: one per node, written by that node's agent alone, holding one entry per
// ImagePrewarm. Thousands of agents never contend on one object; a 409 here only means our own copy was
// stale (an agent restarted), and is settled by reading it again and writing our entry over it.
import { isConflict } from '../../k8s/api-error.js';
import type { FleetApi } from './fleet-api.js';
import type { NodePrewarm, NodePrewarmEntry } from './types.js';

/** Reads and writes one node's NodePrewarm. */
export class NodeRecord {
  private obj: NodePrewarm | undefined;
  /** obj was read (it may still be undefined: the node has no record yet). */
  private loaded = false;
  /** Entries kept here, not written yet (a node only waiting has nothing the summary would not assume). */
  private readonly unwritten = new Map<string, NodePrewarmEntry>();
  /** Requests made to the API server (for the benchmark's per-node count). */
  writes = 0;

  constructor(
    private readonly api: FleetApi,
    readonly node: string,
  ) {}

  /** This node's entry for a prewarm, as last read or written (reads once when not loaded yet). */
  async entry(prewarm: string): Promise<NodePrewarmEntry | undefined> {
    if (!this.loaded) await this.load();
    return this.unwritten.get(prewarm) ?? this.obj?.status?.prewarms?.[prewarm];
  }

  /**
   * Keeps an entry that need not be written yet: a fresh one, all Waiting, which is what every reader assumes
   * of a node without a record for the generation. The next put writes it (or what it became).
   */
  keep(prewarm: string, entry: NodePrewarmEntry): void {
    this.unwritten.set(prewarm, entry);
  }

  /** Writes this node's entry for a prewarm (undefined removes it), creating the object when missing. */
  async put(prewarm: string, entry: NodePrewarmEntry | undefined): Promise<void> {
    this.unwritten.delete(prewarm);
    if (!entry && this.loaded && !this.obj?.status?.prewarms?.[prewarm]) return; // nothing written to remove
    for (let attempt = 0; ; attempt++) {
      if (!this.obj) await this.load();
      if (!this.obj) {
        try {
          this.writes++;
          this.obj = await this.api.createNodePrewarm({ metadata: { name: this.node }, spec: { nodeName: this.node } });
        } catch (err) {
          if (!isConflict(err)) throw err;
          await this.load();
          continue;
        }
      }
      const prewarms = { ...(this.obj.status?.prewarms ?? {}) };
      if (entry) prewarms[prewarm] = entry;
      else delete prewarms[prewarm];
      try {
        this.writes++;
        this.obj = await this.api.writeNodePrewarmStatus({ ...this.obj, status: { prewarms } });
        return;
      } catch (err) {
        if (!isConflict(err) || attempt >= 5) throw err;
        await this.load();
      }
    }
  }

  /** Drops the cached copy (the next call reads again). */
  async load(): Promise<void> {
    this.writes++;
    this.obj = await this.api.getNodePrewarm(this.node);
    this.loaded = true;
  }
}
