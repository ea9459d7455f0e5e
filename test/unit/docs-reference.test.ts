// docs/reference.md lists every daemon flag with its environment variable and default, every metric the code
// registers, and every reason: the flags are read from the daemon's own command, the metrics from the source.
// docs/development.md names only paths that exist.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Option } from 'commander';
import { daemonCommand } from '../../src/daemon/options.js';
import { Reasons, RefusalReasons } from '../../src/engine/reasons.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const reference = readFileSync(path.join(root, 'docs/reference.md'), 'utf8');

/** A flag as the reference must show it: its long name, its variable, and its default when it has one. */
interface FlagFact {
  flag: string;
  env?: string;
  defaultValue?: string;
}

/** The daemon's flags, as its command defines them (--version and --help excluded). */
function daemonFlags(): FlagFact[] {
  const options: readonly Option[] = daemonCommand('0').options;
  return options
    .filter((o) => o.long !== undefined && o.long !== '--version' && o.long !== '--help')
    .map((o) => ({ flag: o.long as string, env: o.envVar, defaultValue: typeof o.defaultValue === 'string' ? o.defaultValue : undefined }));
}

/** What the reference lacks: a flag with no table row, or a row without its variable or default. */
function missingFlags(doc: string, flags: FlagFact[]): string[] {
  const rows = doc.split('\n').filter((l) => l.startsWith('|'));
  const out: string[] = [];
  for (const f of flags) {
    // The flag's own cell starts with it: `--grace DURATION`, `--runtime auto|cri|docker`, `--prewarm-pin`.
    const row = rows.find((r) => new RegExp(`^\\|\\s*\`${f.flag}[\\s\`]`).test(r));
    if (!row) {
      out.push(`${f.flag}: no row`);
      continue;
    }
    if (f.env && !row.includes(`\`${f.env}\``)) out.push(`${f.flag}: row lacks ${f.env}`);
    if (f.defaultValue !== undefined && !row.includes(`\`${f.defaultValue}\``)) out.push(`${f.flag}: row lacks its default ${f.defaultValue}`);
  }
  return out;
}

/** Every .ts file under dir. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

/** Names of the prom-client metrics src/ creates (`new Counter({ name: '...' ...`). */
function registeredMetrics(): string[] {
  const names = new Set<string>();
  for (const file of sources(path.join(root, 'src'))) {
    const text = readFileSync(file, 'utf8');
    if (!text.includes('prom-client')) continue;
    for (const m of text.matchAll(/new (?:Counter|Gauge|Histogram|Summary)(?:<[^>]*>)?\(\{\s*name:\s*['"`]([a-zA-Z_:][a-zA-Z0-9_:]*)['"`]/g)) names.add(m[1]);
  }
  return [...names].sort();
}

describe('docs/reference.md', () => {
  it('has a row for every daemon flag with its environment variable and default', () => {
    const flags = daemonFlags();
    assert.ok(flags.length >= 38, `expected the daemon's flags, found ${flags.length}`);
    assert.deepEqual(missingFlags(reference, flags), []);
  });

  it('notices a flag whose row is gone', () => {
    const flags = daemonFlags();
    const withoutGrace = reference.split('\n').filter((l) => !l.startsWith('| `--grace ')).join('\n');
    assert.deepEqual(missingFlags(withoutGrace, flags), ['--grace: no row']);
    const wrongEnv = reference.replace('`INPLACE_AGENT_PULL_RETRIES`', '`INPLACE_AGENT_RETRIES`');
    assert.deepEqual(missingFlags(wrongEnv, flags), ['--pull-retries: row lacks INPLACE_AGENT_PULL_RETRIES']);
  });

  it('lists every metric the code registers', () => {
    const metrics = registeredMetrics();
    assert.ok(metrics.length >= 13, `expected the agent's metrics, found ${metrics.join(', ')}`);
    const table = reference.split('\n').filter((l) => l.startsWith('| `'));
    const missing = metrics.filter((m) => !table.some((r) => r.startsWith(`| \`${m}\``)));
    assert.deepEqual(missing, []);
  });

  it('lists every reason constant in its Reasons table', () => {
    const section = reference.slice(reference.indexOf('## Reasons'), reference.indexOf('## Metrics'));
    const rows = section.split('\n').filter((l) => l.startsWith('| `'));
    const missing = [...Object.values(Reasons), ...Object.values(RefusalReasons)].filter((r) => !rows.some((row) => row.split('|')[1].includes(`\`${r}\``)));
    assert.deepEqual(missing, []);
  });
});

/** Top-level folders a path named in the docs starts with. */
const TOP_DIRS = ['src/', 'test/', 'scripts/', 'deploy/', 'docs/', 'bench/', 'proto/', 'systemd/', '.ci/'];
/** Endings of a file name the docs name without its folder. */
const FILE_ENDING = /\.(ts|js|mjs|yaml|yml|md|sh|proto|json|service)$/;
/** Paths that a build or a run makes: absent from a fresh clone. */
const MADE_BY_A_RUN = new Set(['.ci/logs/', 'src/gen/']);

/** Every file under the repository's own folders (not node_modules or dist), by name. */
function repoFileNames(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(dir, e.name));
      else names.add(e.name);
    }
  };
  for (const d of TOP_DIRS) if (existsSync(path.join(root, d))) walk(path.join(root, d));
  return names;
}

/**
 * The paths a markdown page names that do not exist. A path is a `code` span, a link target, or the first word of
 * a line in a code block, that starts with a top-level folder or ends like a file name. It is looked for from the
 * repository's root, then from src/, scripts/ and docs/ (the pages name `kube/node-pods.ts`,
 * `lib/kube-nodes.sh`); a bare file name in a table row whose first cell is a folder is looked for in that folder,
 * and elsewhere anywhere in the repository (or at its root).
 */
function missingPaths(doc: string): string[] {
  const names = repoFileNames();
  const missing = new Set<string>();
  let inBlock = false;
  for (const line of doc.split('\n')) {
    if (line.startsWith('```')) {
      inBlock = !inBlock;
      continue;
    }
    const named = [...line.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]);
    named.push(...[...line.matchAll(/\]\(([^)#\s]+)/g)].map((m) => m[1]));
    if (inBlock && /^\S+\/\S*\s/.test(line)) named.push(line.split(/\s/)[0]);
    const rowDir = /^\| `(src\/[^`]*?)\/?`/.exec(line)?.[1];
    for (const p of named.map((n) => n.replace(/(\.\.\.|[,;])+$/, ''))) {
      if (/^(\/|dist\/|http|\$)/.test(p) || /[$*<>:=]/.test(p) || MADE_BY_A_RUN.has(p)) continue;
      if (!TOP_DIRS.some((d) => p.startsWith(d)) && !FILE_ENDING.test(p)) continue;
      if (!p.includes('/')) {
        const found = rowDir ? existsSync(path.join(root, rowDir, p)) : names.has(p) || existsSync(path.join(root, p));
        if (!found) missing.add(rowDir ? `${rowDir}/${p}` : p);
        continue;
      }
      if (!['', 'src', 'scripts', 'docs'].some((base) => existsSync(path.join(root, base, p)))) missing.add(p);
    }
  }
  return [...missing].sort();
}

describe('docs/development.md', () => {
  const development = readFileSync(path.join(root, 'docs/development.md'), 'utf8');

  it('names only paths that exist', () => {
    assert.deepEqual(missingPaths(development), []);
  });

  it('notices a path that is gone, a bare file name in no folder, and a table row naming a file not in its folder', () => {
    const doc = [
      'See `src/engine/no-such-plan.ts` and [the page](no-such-page.md), and `gone-helper.ts`.',
      '| `src/engine/` | the engine (`restart-plan.ts`), and `runtime.ts` |',
      '```',
      'scripts/no-such-script    what it does',
      '```',
    ].join('\n');
    assert.deepEqual(missingPaths(doc), ['gone-helper.ts', 'no-such-page.md', 'scripts/no-such-script', 'src/engine/runtime.ts', 'src/engine/no-such-plan.ts'].sort());
  });
});
