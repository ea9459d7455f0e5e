// Human durations on the command line: `500ms`, `30s`, `2m`, `1h`, `1m30s`, or a bare number of seconds.
import { AgentError } from './errors.js';

/** The longest delay a Node.js timer takes (2^31-1 ms, about 596 h; a longer one fires at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a duration string; InvalidArgument naming the text otherwise. */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Math.round(Number(t) * 1000);
  const parts = [...t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== t) {
    throw new AgentError('InvalidArgument', `invalid duration "${text}" (use e.g. 500ms, 30s, 2m, 1m30s)`);
  }
  return Math.round(parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]], 0));
}

/** A short human form of milliseconds: `850ms`, `1.2s`, `3m04s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${m}m${String(s).padStart(2, '0')}s`;
}
