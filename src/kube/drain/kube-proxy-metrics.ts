// What the node's kube-proxy says about its data plane, read from its metrics address: when it last applied
// its rules, when it last received a change to apply, how many endpoint changes wait to be applied, and (from
// /configz) the least time it leaves between two syncs. Parsing is pure; reading is one HTTP GET per sample.
import { parseDuration } from '../../duration.js';

/** The default metrics address of kube-proxy (its metricsBindAddress). */
export const DEFAULT_PROXY_METRICS_URL = 'http://127.0.0.1:10249';

/** Metric: epoch seconds of the last successful sync of the rules, one per IP family. */
const LAST_SYNC = 'kubeproxy_sync_proxy_rules_last_timestamp_seconds';
/** Metric: epoch seconds of the last change received (a sync queued), one per IP family. */
const LAST_QUEUED = 'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds';
/** Metric: endpoint changes received and not yet applied. */
const PENDING = 'kubeproxy_sync_proxy_rules_endpoint_changes_pending';

/** An IP family as kube-proxy's metrics label it. */
export type IpFamily = 'IPv4' | 'IPv6';

/** One reading of kube-proxy's sync metrics. */
export interface ProxySyncSample {
  /**
   * Epoch ms of the last sync, per IP family (a dual-stack kube-proxy syncs a family only when something of it
   * changed); '' holds a reading without the label.
   */
  lastSyncMs: Record<string, number>;
  /** Epoch ms of the last change received, per IP family (as lastSyncMs). */
  lastQueuedMs: Record<string, number>;
  /** Endpoint changes not yet applied (summed over families). */
  pending: number;
}

/** kube-proxy's configuration as far as the drain needs it. */
export interface ProxyConfig {
  mode: string;
  minSyncMs: number;
}

/** The sync metrics out of a Prometheus text exposition; throws naming what is missing. */
export function parseSyncMetrics(text: string): ProxySyncSample {
  const last: Record<string, number> = {};
  const queued: Record<string, number> = {};
  let pending: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const v = Number(m[3]);
    if (!Number.isFinite(v)) continue;
    const family = /ip_family="([^"]*)"/.exec(m[2] ?? '')?.[1] ?? '';
    if (m[1] === LAST_SYNC) last[family] = v * 1000;
    else if (m[1] === LAST_QUEUED) queued[family] = v * 1000;
    else if (m[1] === PENDING) pending = (pending ?? 0) + v;
  }
  if (Object.keys(last).length === 0) throw new Error(`no ${LAST_SYNC} in the metrics`);
  return { lastSyncMs: last, lastQueuedMs: queued, pending: pending ?? 0 };
}

/** The last sync of a family: its own reading, else (no such label) the latest of any. */
export function lastSyncOf(s: ProxySyncSample, family: IpFamily): number {
  return s.lastSyncMs[family] ?? Math.max(...Object.values(s.lastSyncMs));
}

/**
 * Whether kube-proxy has applied every change it received for a family: nothing pending, and its last sync
 * came after the last change it queued (a change that arrives during a sync shows as pending).
 */
export function appliedAll(s: ProxySyncSample, family: IpFamily): boolean {
  const queued = s.lastQueuedMs[family] ?? (Object.keys(s.lastQueuedMs).length > 0 ? Math.max(...Object.values(s.lastQueuedMs)) : 0);
  return s.pending === 0 && lastSyncOf(s, family) >= queued;
}

/** Go duration text ("1s", "500ms", "1m0s") in ms. */
function goDuration(v: unknown): number | undefined {
  if (typeof v === 'number') return v / 1e6; // nanoseconds
  if (typeof v !== 'string' || v === '') return undefined;
  try {
    return parseDuration(v.replace(/(\d)m0s$/, '$1m'));
  } catch {
    return undefined;
  }
}

/** Mode and minSyncPeriod out of kube-proxy's /configz answer; throws naming what is missing. */
export function parseConfigz(body: unknown): ProxyConfig {
  const root = (body as Record<string, unknown> | null) ?? {};
  const cfg = (root['kubeproxy.config.k8s.io'] ?? root) as Record<string, unknown>;
  const mode = typeof cfg.mode === 'string' && cfg.mode !== '' ? cfg.mode : 'iptables';
  const byMode = cfg[mode] as Record<string, unknown> | undefined;
  const min = goDuration(cfg.minSyncPeriod) ?? goDuration(byMode?.minSyncPeriod);
  if (min === undefined) throw new Error(`no minSyncPeriod for mode ${mode} in /configz`);
  return { mode, minSyncMs: min };
}

/** Reads kube-proxy's metrics address. */
export class KubeProxyMetrics {
  constructor(
    readonly url: string,
    private readonly timeoutMs = 500,
  ) {}

  /** The current sync metrics; throws saying why they cannot be read. */
  async sample(): Promise<ProxySyncSample> {
    return parseSyncMetrics(await this.get('/metrics', (r) => r.text()));
  }

  /** kube-proxy's mode and minSyncPeriod; throws saying why they cannot be read. */
  async config(): Promise<ProxyConfig> {
    return parseConfigz(await this.get('/configz', (r) => r.json()));
  }

  private async get<T>(path: string, body: (r: Response) => Promise<T>): Promise<T> {
    const url = new URL(path, this.url).toString();
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(this.timeoutMs) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      // The timeout covers the body too: read here, so that its failure names the address as well.
      return await body(res);
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      throw new Error(`${url}: ${cause ?? (err instanceof Error ? err.message : String(err))}`);
    }
  }
}
