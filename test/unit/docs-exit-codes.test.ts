// README's exit-status sentence and docs/reference.md's exit-status table say what the code's one table
// (src/cli/exit-codes.ts) says, and both programs' help prints that table.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT_CODES } from '../../src/cli/exit-codes.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const flat = (s: string) => s.replace(/\s+/g, ' ');

/** The reference's exit-status rows as code -> text, from the table after "Exit statuses". */
function referenceRows(doc: string): Map<number, string> {
  const section = doc.slice(doc.indexOf('Exit statuses, the same'));
  const rows = new Map<number, string>();
  for (const line of section.split('\n').slice(1)) {
    if (line.trim() === '' && rows.size > 0) break;
    const m = /^\| (\d+) \| (.*) \|$/.exec(line);
    if (m) rows.set(Number(m[1]), m[2]);
  }
  return rows;
}

/** What is wrong with the reference's table against the code's: missing or extra codes, a row not starting with its summary. */
export function referenceMismatches(doc: string): string[] {
  const rows = referenceRows(doc);
  const out: string[] = [];
  for (const e of EXIT_CODES) {
    const row = rows.get(e.code);
    if (row === undefined) out.push(`${e.code}: no row`);
    else if (!flat(row).startsWith(e.summary)) out.push(`${e.code}: row does not start with "${e.summary}"`);
  }
  for (const code of rows.keys()) if (!EXIT_CODES.some((e) => e.code === code)) out.push(`${code}: not in the code's table`);
  return out;
}

/** What is wrong with README's sentence: each code with its summary ("N on ..." or "N when ..."), and no other code. */
export function readmeMismatches(readme: string): string[] {
  const text = flat(readme);
  const start = text.indexOf('exit 0 on');
  if (start < 0) return ['no "exit 0 on" sentence'];
  const sentence = text.slice(start, text.indexOf('. ', start));
  const out: string[] = [];
  for (const e of EXIT_CODES) {
    if (!sentence.includes(`${e.code} on ${e.summary}`) && !sentence.includes(`${e.code} when ${e.summary}`)) out.push(`${e.code}: not "${e.code} on|when ${e.summary}"`);
  }
  const extra = [...sentence.matchAll(/, (\d+) (?:on|when) /g)].map((m) => Number(m[1])).filter((c) => !EXIT_CODES.some((e) => e.code === c));
  for (const c of extra) out.push(`${c}: not in the code's table`);
  return out;
}

describe('exit statuses in the docs', () => {
  const reference = readFileSync(path.join(root, 'docs/reference.md'), 'utf8');
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');

  it("docs/reference.md's table has a row per code, each starting with the code's summary", () => {
    assert.deepEqual(referenceMismatches(reference), []);
  });

  it("README's sentence gives every code with its summary", () => {
    assert.deepEqual(readmeMismatches(readme), []);
  });

  it('notices a drifted row or sentence', () => {
    assert.deepEqual(referenceMismatches(reference.replace('| 2 | bad usage', '| 2 | wrong usage')), ['2: row does not start with "bad usage"']);
    assert.deepEqual(readmeMismatches(flat(readme).replace('2 on bad usage', '2 on misuse')), ['2: not "2 on|when bad usage"']);
    assert.deepEqual(readmeMismatches(flat(readme).replace('2 on bad usage', '2 on bad usage, 4 when it rains')), ['4: not in the code\'s table']);
  });

  it("both programs' help prints the table", () => {
    for (const bin of ['main.js', 'kubectl-inplace.js']) {
      const help = spawnSync(process.execPath, [path.resolve(here, '../../src/cli', bin), '--help'], { encoding: 'utf8' });
      assert.equal(help.status, 0, help.stderr);
      for (const e of EXIT_CODES) assert.ok(flat(help.stdout).includes(`${e.code} ${e.summary}`), `${bin}: ${e.code} ${e.summary}`);
    }
  });
});
