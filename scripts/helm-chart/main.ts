// Writes deploy/helm/inplace-agent from deploy/ (scripts/helm-chart/chart.ts), or with --check says which files
// differ from what deploy/ gives and exits 1. `npm run gen:helm` runs it after a build.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chartFiles } from './chart.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const chartDir = path.join(root, 'deploy/helm/inplace-agent');

/** Every file under dir, relative to it. */
function existing(dir: string, under = ''): string[] {
  let entries;
  try {
    entries = readdirSync(path.join(dir, under), { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => (e.isDirectory() ? existing(dir, path.join(under, e.name)) : [path.join(under, e.name)]));
}

const want = chartFiles(root);
if (process.argv.includes('--check')) {
  const stale = [...new Set([...want.keys(), ...existing(chartDir)])].filter((f) => {
    try {
      return readFileSync(path.join(chartDir, f), 'utf8') !== want.get(f);
    } catch {
      return true;
    }
  });
  if (stale.length) {
    console.error(`helm-chart: deploy/helm/inplace-agent is not what deploy/ gives (${stale.sort().join(', ')}): run npm run gen:helm`);
    process.exit(1);
  }
  console.log(`helm-chart: deploy/helm/inplace-agent is current (${want.size} files)`);
} else {
  rmSync(chartDir, { recursive: true, force: true });
  for (const [f, text] of want) {
    mkdirSync(path.dirname(path.join(chartDir, f)), { recursive: true });
    writeFileSync(path.join(chartDir, f), text);
  }
  console.log(`helm-chart: wrote ${want.size} files to ${path.relative(root, chartDir)}`);
}
