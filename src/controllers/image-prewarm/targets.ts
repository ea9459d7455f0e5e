// Which nodes an ImagePrewarm is for, in its stable order, cached for a while so that a waiting node does
// not list the cluster's nodes (or pods) on every poll.
import type { Clock } from '../../clock.js';
import type { FleetApi } from './fleet-api.js';
import { stableOrder } from './node-order.js';
import type { ImagePrewarm } from './types.js';

/** The targeted nodes of a prewarm, in stable order. No selector at all means every node. */
export async function targetedNodes(api: FleetApi, pw: ImagePrewarm): Promise<string[]> {
  const spec = pw.spec;
  const nodes = spec.podSelector ? await api.nodesOfPods(spec.podSelector.namespace, spec.podSelector.matchLabels ?? {}) : await api.nodesMatching(spec.nodeSelector ?? {});
  return stableOrder(pw.metadata.name, nodes);
}

/** Caches each prewarm's targeted nodes per generation for ttlMs. */
export class TargetCache {
  private readonly cache = new Map<string, { key: string; at: number; order: string[]; index: Map<string, number> }>();
  /** List requests made (for the benchmark's per-node count). */
  requests = 0;

  constructor(
    private readonly api: FleetApi,
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  /** The targeted nodes of the prewarm, in stable order. */
  async order(pw: ImagePrewarm): Promise<string[]> {
    const key = `${pw.metadata.uid ?? ''}/${pw.metadata.generation ?? 0}`;
    const hit = this.cache.get(pw.metadata.name);
    if (hit && hit.key === key && this.clock.now() - hit.at < this.ttlMs) return hit.order;
    this.requests++;
    const order = await targetedNodes(this.api, pw);
    this.cache.set(pw.metadata.name, { key, at: this.clock.now(), order, index: new Map(order.map((n, i) => [n, i])) });
    return order;
  }

  /** Each node's place in the prewarm's order as last listed by order() (empty before). */
  index(prewarm: string): ReadonlyMap<string, number> {
    return this.cache.get(prewarm)?.index ?? new Map();
  }

  /** Forgets a prewarm. */
  drop(name: string): void {
    this.cache.delete(name);
  }
}
