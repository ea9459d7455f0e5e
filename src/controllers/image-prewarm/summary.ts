// ImagePrewarm.status, summed up from the per-node records. Any agent could compute it; to keep the API load
// O(1) per node, only the agent of the first node in the prewarm's stable order writes it (one list of the
// NodePrewarm objects per interval), and the second one takes over when the summary has gone stale.
import { PrewarmReasons } from './reasons.js';
import type { ImagePrewarm, ImagePrewarmStatus, NodePrewarm } from './types.js';

/** The status of a prewarm over its targeted nodes (in stable order), from their NodePrewarm objects. */
export function summarize(pw: ImagePrewarm, order: string[], records: NodePrewarm[]): ImagePrewarmStatus {
  const gen = pw.metadata.generation ?? 0;
  const byNode = new Map(records.map((r) => [r.spec?.nodeName ?? r.metadata.name, r]));
  const s: ImagePrewarmStatus = { observedGeneration: gen, desired: order.length, succeeded: 0, failed: 0, pulling: 0, waiting: 0, failedNodes: [], seedsDone: true };
  const seeds = Math.min(pw.spec.seedNodes ?? 0, order.length);
  for (const [i, node] of order.entries()) {
    const e = byNode.get(node)?.status?.prewarms?.[pw.metadata.name];
    const phase = e && e.generation === gen ? e.phase : 'Waiting';
    if (i < seeds && phase !== 'Succeeded' && phase !== 'Failed') s.seedsDone = false;
    if (phase === 'Succeeded') s.succeeded++;
    else if (phase === 'Pulling') s.pulling++;
    else if (phase === 'Waiting') s.waiting++;
    else {
      s.failed++;
      const failed = e?.images.filter((i) => i.phase === 'Failed') ?? [];
      const message = failed.map((i) => `${i.image}: ${i.message ?? 'failed'}`).join('; ');
      s.failedNodes.push({ node, reason: failed.find((i) => i.reason)?.reason ?? PrewarmReasons.PullFailed, ...(message ? { message } : {}) });
    }
  }
  return s;
}

/** Which of the prewarm's nodes writes the summary: the first in order; the second when it went stale. */
export function isSummarizer(node: string, order: string[], status: ImagePrewarmStatus | undefined, nowMs: number, staleMs: number): boolean {
  if (order[0] === node) return true;
  if (order[1] !== node) return false;
  const last = status?.lastSummaryTime ? Date.parse(status.lastSummaryTime) : 0;
  return nowMs - last > staleMs;
}

/** True when two summaries say the same (times and writer aside). */
export function sameSummary(a: ImagePrewarmStatus | undefined, b: ImagePrewarmStatus): boolean {
  if (!a) return false;
  const strip = (s: ImagePrewarmStatus) => JSON.stringify({ ...s, summarizedBy: undefined, lastSummaryTime: undefined });
  return strip(a) === strip(b);
}

/** Where a pre-warm stands for whoever waits on it before touching pods (an InPlaceRollout, a SidecarSet). */
export interface PrewarmProgress {
  name: string;
  /** Every targeted node has the images. */
  done: boolean;
  failedNodes: { node: string; reason: string }[];
  /** No agent has summed it up yet: since when it exists (ms since the epoch). */
  silentSinceMs?: number;
}

/** The pre-warm's progress as its summed-up status says (a status of an older generation says nothing). */
export function prewarmProgress(pw: ImagePrewarm): PrewarmProgress {
  const st = pw.status;
  const current = st?.observedGeneration === (pw.metadata.generation ?? 0);
  const created = pw.metadata.creationTimestamp ? new Date(pw.metadata.creationTimestamp).getTime() : undefined;
  return {
    name: pw.metadata.name,
    done: current && (st?.desired ?? 0) > 0 && st?.succeeded === st?.desired,
    failedNodes: current ? (st?.failedNodes ?? []) : [],
    ...(!st?.lastSummaryTime && created !== undefined ? { silentSinceMs: created } : {}),
  };
}

/**
 * The pre-warm's progress as the nodes' own records say, over `nodes`: done (or failed) as soon as the last node
 * has recorded its part, rather than when an agent next sums them up in the status (every few seconds). The same
 * sums as the status's (summarize).
 */
export function progressFromRecords(pw: ImagePrewarm, nodes: string[], records: NodePrewarm[]): PrewarmProgress {
  const s = summarize(pw, [...new Set(nodes)].sort(), records);
  return { ...prewarmProgress(pw), done: (s.desired ?? 0) > 0 && s.succeeded === s.desired, failedNodes: s.failedNodes ?? [] };
}
