// Where the agent's time went in a bench run: the step traces (src/engine/step-trace.ts) an agent started with
// `--log-level debug --log-format json` wrote, summarised as the median time of each mark after the
// operation's first one, over the operations of the timed rounds.
import fs from 'node:fs';
import { TRACE_MESSAGE, type TraceMark } from '../src/engine/step-trace.js';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** The marks of each traced operation in a JSON log file, by operation id. */
export function readTraces(logFile: string): Map<string, TraceMark[]> {
  const out = new Map<string, TraceMark[]>();
  for (const line of fs.readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes(TRACE_MESSAGE)) continue;
    try {
      const rec = JSON.parse(line) as { message?: string; op?: string; marks?: TraceMark[] };
      if (rec.message === TRACE_MESSAGE && rec.op && rec.marks) out.set(rec.op, rec.marks);
    } catch {
      // a line cut short by the agent's exit
    }
  }
  return out;
}

/**
 * Lines of a table: each mark (its first occurrence in an operation) with its median time after the operation's
 * first mark and the median step from the mark before it, over the operations `ids` (those found traced), in
 * the order of the medians.
 */
export function traceSummary(logFile: string, ids: string[], indent = '    '): string[] {
  const traces = readTraces(logFile);
  const found = ids.map((id) => traces.get(id)).filter((m): m is TraceMark[] => m !== undefined);
  if (found.length === 0) return [`${indent}(no step trace found for these operations)`];
  const at = new Map<string, number[]>();
  for (const marks of found) {
    const seen = new Set<string>();
    for (const m of marks) {
      if (seen.has(m.what)) continue;
      seen.add(m.what);
      at.set(m.what, [...(at.get(m.what) ?? []), m.ms]);
    }
  }
  const rows = [...at].map(([what, ms]) => ({ what, med: median(ms), n: ms.length })).sort((a, b) => a.med - b.med);
  const width = Math.max(...rows.map((r) => r.what.length));
  let prev = 0;
  return [
    `${indent}step trace, median over ${found.length} operations (ms after the first mark; +ms since the mark above):`,
    ...rows.map((r) => {
      const line = `${indent}  ${r.what.padEnd(width)}  ${r.med.toFixed(1).padStart(7)}  +${(r.med - prev).toFixed(1)}${r.n < found.length ? `  (in ${r.n} of ${found.length})` : ''}`;
      prev = r.med;
      return line;
    }),
  ];
}
