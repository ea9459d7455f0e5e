// prom-client requires @opentelemetry/api as it loads (for exemplars, which the agent never turns on): the daemon
// puts a stand-in in its place (src/daemon/without-otel.ts). Checked in a fresh node: the real package's modules
// are not loaded, and the default process metrics that asked for it are still there and count.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');

function probe(entry: string): { otelFiles: string[]; cpuMetrics: string[]; cpuTotal: number } {
  const script = `
    import { createRequire } from 'node:module';
    const { startDaemon } = await import(${JSON.stringify(pathToFileURL(path.join(root, entry)).href)});
    void startDaemon;
    const require = createRequire(${JSON.stringify(pathToFileURL(path.join(root, 'package.json')).href)});
    const prom = require('prom-client');
    const registry = new prom.Registry();
    prom.collectDefaultMetrics({ register: registry });
    for (const end = Date.now() + 300; Date.now() < end; );
    const text = await registry.metrics();
    const cpu = text.split('\\n').filter((l) => l.startsWith('process_cpu_'));
    // The stand-in sits under the package's main file alone; the real API brings its other files and a diag API.
    const otel = Object.keys(require.cache).filter((f) => f.includes('/@opentelemetry/api/'));
    const otelFiles = otel.length > 1 || otel.some((f) => require.cache[f].exports.diag !== undefined) ? otel : [];
    process.stdout.write(JSON.stringify({ otelFiles, cpuMetrics: cpu.map((l) => l.split(' ')[0]), cpuTotal: Number(cpu.find((l) => l.startsWith('process_cpu_seconds_total '))?.split(' ')[1]) }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: root });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe('daemon: prom-client without @opentelemetry/api', () => {
  it('importing the daemon loads no module of the real package, and the process CPU metrics still count', function () {
    this.timeout(20_000);
    const p = probe('dist/src/daemon/daemon.js');
    assert.deepEqual(p.otelFiles, []);
    assert.deepEqual(p.cpuMetrics, ['process_cpu_user_seconds_total', 'process_cpu_system_seconds_total', 'process_cpu_seconds_total']);
    assert.ok(p.cpuTotal > 0, `process_cpu_seconds_total counted the probe's own work: ${p.cpuTotal}`);
  });

  it('without the stand-in, prom-client does load it (so the check above can fail)', function () {
    this.timeout(20_000);
    const r = spawnSync(process.execPath, ['-e', "require('prom-client'); process.stdout.write(String(Object.keys(require.cache).filter((f) => f.includes('/@opentelemetry/api/')).length))"], { encoding: 'utf8', cwd: root });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(Number(r.stdout) > 0, 'prom-client alone loads the real @opentelemetry/api');
  });
});
