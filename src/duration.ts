// Human durations on the command line: `500ms`, `30s`, `2m`, `1h`, `1m30s`. One rule for every duration flag of
// inplace-agent, inplacectl and kubectl inplace (durationFlagMs): a unit is required (a bare number could mean
// seconds or milliseconds; only 0 needs none), 0 only where the flag gives it a meaning, at most 596h, and a bad
// value is refused naming the flag.
import { AgentError } from './errors.js';

/** The longest delay a Node.js timer takes (2^31-1 ms, about 596 h; a longer one fires at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The rule in one sentence, as help texts and docs/reference.md give it. */
export const DURATION_RULE = 'Durations take a unit: 500ms, 5s, 2m, 1m30s (a bare number is refused, except 0 where a flag says what 0 means).';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a duration string with units (a bare `0` is 0); InvalidArgument naming the text otherwise. */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (/^0+(\.0+)?$/.test(t)) return 0;
  if (/^\d+(\.\d+)?$/.test(t)) throw new AgentError('InvalidArgument', `"${t}" needs a unit: "${t}s" for seconds, "${t}ms" for milliseconds`);
  const parts = [...t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== t) {
    throw new AgentError('InvalidArgument', `invalid duration "${text}" (use e.g. 500ms, 30s, 2m, 1m30s)`);
  }
  return Math.round(parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]], 0));
}

/** How a duration flag takes its value. */
export interface DurationFlagRule {
  /** What 0 means for this flag ("no deadline", "once at start"); without it 0 is refused. */
  zeroMeans?: string;
  /** The least non-zero value, ms (default 1). */
  minMs?: number;
}

/**
 * A duration flag's value in ms by the one rule; InvalidArgument whose message starts with `name` (the flag, or
 * the variable that set it) otherwise.
 */
export function durationFlagMs(name: string, value: string, rule: DurationFlagRule = {}): number {
  const t = value.trim();
  if (/^\d+(\.\d+)?$/.test(t) && Number(t) !== 0) throw new AgentError('InvalidArgument', `${name} needs a unit: "${t}s" for seconds, "${t}ms" for milliseconds (got "${value}")`);
  let ms: number;
  try {
    ms = parseDuration(value);
  } catch (err) {
    throw new AgentError('InvalidArgument', `${name}: ${(err as Error).message}`);
  }
  const min = rule.minMs ?? 1;
  if (ms > MAX_TIMER_MS || (ms === 0 && !rule.zeroMeans) || (ms > 0 && ms < min)) {
    const low = min >= 1000 ? `${min / 1000}s` : `${min}ms`;
    throw new AgentError('InvalidArgument', `${name} must be ${rule.zeroMeans ? `0 (${rule.zeroMeans}) or ` : ''}between ${low} and 596h, got "${value}"`);
  }
  return ms;
}

/** A short human form of milliseconds: `850ms`, `1.2s`, `3m04s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${m}m${String(s).padStart(2, '0')}s`;
}
