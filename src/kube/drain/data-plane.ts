// After the EndpointSlices let an address go, the node's data plane must apply that before the container
// stops: kube-proxy applies slice changes at most once per minSyncPeriod. Where kube-proxy's metrics can be
// read, the wait ends once minSyncPeriod has passed since the change was seen (every node's proxy applies a
// change within that period of receiving it) AND the local kube-proxy has applied every change it received:
// nothing pending, its last sync after the last change it queued. (It may well have received and applied the
// change before the agent's own watch showed it: then it does not sync again, and "a sync after the change
// was seen" would never come.) Where nothing can be read (an eBPF data plane, no reachable metrics), it ends
// after a fixed settle time. Either way it stays within the bound given.
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import { appliedAll, lastSyncOf, type IpFamily, type KubeProxyMetrics, type ProxyConfig } from './kube-proxy-metrics.js';

/** What the wait reads of kube-proxy (KubeProxyMetrics, or a fake). */
export type ProxyReader = Pick<KubeProxyMetrics, 'url' | 'sample' | 'config'>;

/** Default settle time when the data plane cannot be observed (--drain-settle). */
export const DEFAULT_DRAIN_SETTLE_MS = 2000;

/** kube-proxy's configuration is read again after this long. */
const CONFIG_TTL_MS = 60_000;

/** How the data plane was waited for. */
export type DrainWay = 'kube-proxy' | 'settle';

/** The outcome of one wait. */
export interface DataPlaneWait {
  way: DrainWay;
  /** False when the bound came first. */
  done: boolean;
  waitedMs: number;
  /** What was waited on, for the operation's record. */
  detail: string;
}

/** Waits for the node's data plane to apply a slice change. */
export class DataPlane {
  private config?: { cfg: ProxyConfig; at: number };
  private announced = '';

  constructor(
    private readonly metrics: ProxyReader | undefined,
    private readonly settleMs: number,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly pollMs = 100,
  ) {}

  /** Waits until the change seen at seenAt (clock ms) to an address of `family` is applied, or until `until` (clock ms). */
  async wait(seenAt: number, until: number, family: IpFamily = 'IPv4'): Promise<DataPlaneWait> {
    const began = this.clock.now();
    if (!this.metrics) return this.settle(seenAt, until, began, 'no kube-proxy metrics address configured');
    let cfg: ProxyConfig;
    try {
      cfg = await this.proxyConfig();
      await this.metrics.sample();
    } catch (err) {
      return this.settle(seenAt, until, began, `kube-proxy metrics unreadable: ${(err as Error).message}`);
    }
    this.announce('kube-proxy', `observing kube-proxy at ${this.metrics.url} (mode ${cfg.mode}, minSyncPeriod ${cfg.minSyncMs} ms)`);
    // A read that fails once it was readable (a slow answer on a loaded node) is tried again at the next poll;
    // only reads failing for the whole settle time give the observation up for the settle time.
    let lost: { since: number; why: string } | undefined;
    let missed = 0;
    for (;;) {
      const now = this.clock.now();
      let s;
      try {
        s = await this.metrics.sample();
        lost = undefined;
      } catch (err) {
        missed++;
        lost ??= { since: now, why: (err as Error).message };
        if (this.clock.now() - lost.since >= this.settleMs) return this.settle(seenAt, until, began, `kube-proxy metrics lost for ${this.clock.now() - lost.since} ms: ${lost.why}`);
      }
      if (s && now - seenAt >= cfg.minSyncMs && appliedAll(s, family)) {
        const waited = this.clock.now() - began;
        const last = Math.round(lastSyncOf(s, family) - seenAt);
        const unread = missed > 0 ? ` (${missed} read${missed > 1 ? 's' : ''} of its metrics failed and tried again)` : '';
        return { way: 'kube-proxy', done: true, waitedMs: waited, detail: `kube-proxy (${cfg.mode}) applied every change (last sync ${last >= 0 ? '+' : ''}${last} ms from the slice change), minSyncPeriod ${cfg.minSyncMs} ms: ${waited} ms${unread}` };
      }
      const left = until - this.clock.now();
      if (left <= 0) {
        const waited = this.clock.now() - began;
        return { way: 'kube-proxy', done: false, waitedMs: waited, detail: `kube-proxy (${cfg.mode}) still had changes to apply at the drain bound: ${waited} ms` };
      }
      await this.clock.sleep(Math.min(this.pollMs, left));
    }
  }

  private async proxyConfig(): Promise<ProxyConfig> {
    const now = this.clock.now();
    if (this.config && now - this.config.at < CONFIG_TTL_MS) return this.config.cfg;
    const cfg = await this.metrics!.config();
    this.config = { cfg, at: now };
    return cfg;
  }

  private async settle(seenAt: number, until: number, began: number, why: string): Promise<DataPlaneWait> {
    this.announce('settle', `settling ${this.settleMs} ms after each slice change (${why})`);
    const end = Math.min(seenAt + this.settleMs, until);
    const left = end - this.clock.now();
    if (left > 0) await this.clock.sleep(left);
    const waited = this.clock.now() - began;
    return { way: 'settle', done: seenAt + this.settleMs <= until, waitedMs: waited, detail: `settle ${this.settleMs} ms (${why}): ${waited} ms` };
  }

  /** Logs which way this node drains, once, and again only when that changes. */
  private announce(way: DrainWay, text: string): void {
    if (this.announced === way) return;
    this.announced = way;
    this.log.info(`drain: ${text}`, { way });
  }
}
