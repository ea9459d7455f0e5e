// The pods the kubelet strategy read last. Planning reads a pod just before the operation runs: the first step
// uses that read instead of asking the API server again, and a patch's answer replaces it.
import type { V1Pod } from '../../k8s/client.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import { whileUnavailable } from '../../engine/runtime-wait.js';
import type { KubeApi } from '../../k8s/kube-api.js';

/** A pod read no longer ago than this is not read again before it is acted on, ms. */
export const FRESH_MS = 1000;

/** The latest read of each pod, by namespace/name, kept FRESH_MS. */
export class PodCache {
  private readonly recent = new Map<string, { pod: V1Pod; at: number }>();

  constructor(
    private readonly api: KubeApi,
    private readonly clock: Clock,
    private readonly log?: Logger,
  ) {}

  /** The pod from the API server, remembered as the latest read of it. */
  async read(ns: string, name: string): Promise<V1Pod> {
    const pod = await this.api.readPod(ns, name);
    this.remember(ns, name, pod);
    return pod;
  }

  /** Keeps the pod as the latest seen of it (and drops entries older than FRESH_MS). */
  remember(ns: string, name: string, pod: V1Pod): void {
    const now = this.clock.now();
    this.recent.set(`${ns}/${name}`, { pod, at: now });
    for (const [k, v] of this.recent) if (now - v.at > FRESH_MS) this.recent.delete(k);
  }

  /** The pod as read within FRESH_MS; undefined when there is no such read. */
  recentOf(ns: string, name: string): V1Pod | undefined {
    const r = this.recent.get(`${ns}/${name}`);
    return r && this.clock.now() - r.at <= FRESH_MS ? r.pod : undefined;
  }

  /**
   * The pod as read within FRESH_MS, else from the API server, read again with back-off while the API
   * server is away, up to the deadline (epoch ms).
   */
  async fresh(ns: string, name: string, deadline: number): Promise<V1Pod> {
    return this.recentOf(ns, name) ?? whileUnavailable(() => this.read(ns, name), { clock: this.clock, until: deadline, what: `read pod ${ns}/${name}`, log: this.log });
  }
}
