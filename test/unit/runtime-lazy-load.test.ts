// An agent loads the code of the runtime it found and nothing of the other one (idle RSS, docs/benchmarks.md):
// on CRI no dockerode, on Docker no CRI code or protos; and dockerode without ssh2, whose WebAssembly costs
// memory for a transport the agent refuses. A module hook records what the daemon's import resolves; a child
// process creates one adapter as detection does and reports the packages, CommonJS modules and protos it loaded.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const src = path.resolve(here, '../../src');
const url = (f: string) => JSON.stringify(pathToFileURL(path.join(src, f)).href);

const HOOK = `
export async function resolve(spec, ctx, next) {
  const r = await next(spec, ctx);
  process.stdout.write('resolved ' + r.url + '\\n');
  return r;
}`;
const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)});`;

/** What a node process running script (an ES module) resolved, required (CommonJS) and printed on lines "proto ...". */
function run(script: string): { resolved: string[]; required: string[]; protos: string[] } {
  const tail = `
const { createRequire } = await import('node:module');
for (const f of Object.keys(createRequire(import.meta.url).cache)) process.stdout.write('required ' + f + '\\n');
for (const f of (await import(${url('proto.js')})).loadedProtoFiles()) process.stdout.write('proto ' + f + '\\n');`;
  const r = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(register)}`, '--input-type=module', '-e', script + tail], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split('\n');
  const field = (p: string) => lines.filter((l) => l.startsWith(p + ' ')).map((l) => l.slice(p.length + 1));
  return { resolved: field('resolved'), required: field('required'), protos: field('proto') };
}

/** The adapter detection would create for kind, made through the daemon's factories. */
const adapter = (kind: 'cri' | 'docker', endpoint: string) => `
const { runtimeFactories } = await import(${url('daemon/runtime-factories.js')});
const rt = await runtimeFactories().${kind}(${JSON.stringify(endpoint)});
if (rt.kind !== ${JSON.stringify(kind)}) throw new Error('made a ' + rt.kind + ' adapter');
rt.close();`;

const has = (files: string[], part: string) => files.some((f) => f.includes(part));

describe('runtime adapters are loaded only for the runtime in use', () => {
  it('importing the daemon loads neither adapter', () => {
    const r = run(`await import(${url('daemon/daemon.js')});`);
    assert.ok(has(r.resolved, '/@grpc/grpc-js/'), `the hook saw the daemon's own dependencies: ${r.resolved.length} lines`);
    for (const part of ['/dockerode/', '/runtime/docker/', '/runtime/cri/', '/runtime/containerd/']) {
      assert.ok(!has(r.resolved, part), `${part} resolved by importing the daemon`);
    }
    assert.deepEqual(r.protos, []);
  });

  it('a CRI agent loads the CRI protos and no Docker code', () => {
    const r = run(adapter('cri', 'unix:///nonexistent/containerd.sock'));
    assert.ok(has(r.resolved, '/runtime/cri/cri-runtime.js'));
    assert.ok(r.protos.includes('runtime/v1/api.proto'), `protos: ${r.protos.join(', ')}`);
    for (const part of ['/dockerode/', '/docker-modem/', '/ssh2/', '/runtime/docker/']) {
      assert.ok(!has([...r.resolved, ...r.required], part), `${part} loaded on CRI`);
    }
  });

  it('a Docker agent loads dockerode, without ssh2, and no CRI code or protos', () => {
    const r = run(adapter('docker', 'unix:///nonexistent/docker.sock'));
    assert.ok(has(r.required, '/dockerode/lib/docker.js'), 'dockerode is loaded');
    assert.ok(has(r.required, '/docker-modem/lib/modem.js'), 'its transport is loaded');
    // The stand-in sits in the cache under ssh2's own path; the real ssh2 would have loaded its protocol code.
    assert.ok(!has(r.required, '/ssh2/lib/protocol/'), `ssh2 loaded: ${r.required.filter((f) => f.includes('/ssh2/')).join(', ')}`);
    for (const part of ['/runtime/cri/', '/runtime/containerd/']) assert.ok(!has(r.resolved, part), `${part} loaded on Docker`);
    assert.deepEqual(r.protos, []);
  });
});
