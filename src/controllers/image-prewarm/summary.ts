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
