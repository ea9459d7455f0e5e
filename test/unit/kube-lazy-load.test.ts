// The Kubernetes client library costs RSS (about 20 MiB as the build bundles it, 57 as its own ~1,000 modules): an
// agent outside Kubernetes must not load it, and where it is loaded it is the bundle (src/k8s/client.js).
// A module hook records every module the import of the daemon resolves.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

const HOOK = `
export async function resolve(spec, ctx, next) {
  const r = await next(spec, ctx);
  if (r.url.startsWith('file:')) process.stdout.write('resolved ' + r.url + '\\n');
  return r;
}`;

const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)});`;

/** The packages resolved by importing moduleFile. */
function resolvedBy(moduleFile: string): string[] {
  return resolvedRunning(['--input-type=module', '-e', `await import(${JSON.stringify(pathToFileURL(moduleFile).href)});`]);
}

/** The packages resolved by running node with these arguments (a script and its arguments). */
function resolvedRunning(args: string[]): string[] {
  const r = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(register)}`, ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter((l) => l.startsWith('resolved '));
}

/** The resolved URLs that are the client library: the bundle, or any module of the package itself. */
const kubeClient = (urls: string[]) => urls.filter((u) => u.includes('/src/k8s/client.js') || u.includes('/@kubernetes/client-node/'));

describe('kube: the client library is loaded only in Kubernetes mode', () => {
  it('importing the daemon resolves gRPC but not @kubernetes/client-node', () => {
    const urls = resolvedBy(path.resolve(here, '../../src/daemon/daemon.js'));
    assert.ok(urls.some((u) => u.includes('/@grpc/grpc-js/')), `the hook saw the daemon's own dependencies: ${urls.length} lines`);
    assert.deepEqual(kubeClient(urls), []);
  });

  it('inplacectl loads it only for commands that talk to the API server (a second less at every start)', () => {
    const cli = path.resolve(here, '../../src/cli/main.js');
    const plain = resolvedRunning([cli, '--help']);
    assert.ok(plain.some((u) => u.includes('/@grpc/grpc-js/')), `the hook saw inplacectl's own dependencies: ${plain.length} lines`);
    assert.deepEqual(kubeClient(plain), []);
    for (const m of ['prewarm-api.js', 'kube-restart-command.js']) {
      assert.ok(resolvedBy(path.resolve(here, '../../src/cli', m)).some((u) => u.includes('/src/k8s/client.js')), `${m} is where it is loaded`);
    }
  });

  it('gRPC reflection (@grpc/reflection, its own proto-loader, protobufjs\'s descriptor types) is loaded on the first reflection call, not at start-up', () => {
    assert.deepEqual(resolvedBy(path.resolve(here, '../../src/daemon/daemon.js')).filter((u) => u.includes('/@grpc/reflection/')), []);
    // A server with reflection added, as the agent's API adds it: its methods are registered, the package is not required.
    const reflection = pathToFileURL(path.resolve(here, '../../src/api/reflection.js')).href;
    const limit = pathToFileURL(path.resolve(here, '../../src/api/caller-limit.js')).href;
    const probe = `
      import grpc from '@grpc/grpc-js';
      import { createRequire } from 'node:module';
      const { addReflection, REFLECTION_METHODS } = await import(${JSON.stringify(reflection)});
      const { CallerLimit } = await import(${JSON.stringify(limit)});
      const server = new grpc.Server();
      addReflection(server, 'inplace/v1/agent.proto', new CallerLimit(4));
      const registered = REFLECTION_METHODS.filter((m) => server.handlers.has(m));
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes('/@grpc/reflection/'));
      process.stdout.write(JSON.stringify({ registered: registered.length, loaded }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8', cwd: path.resolve(here, '../..') });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { registered: 2, loaded: [] });
  });

  it('the Kubernetes wiring the daemon imports when a kubeconfig is found does load it, as the one bundled module', () => {
    const urls = resolvedBy(path.resolve(here, '../../src/daemon/kube-wiring.js'));
    assert.deepEqual([...new Set(kubeClient(urls).map((u) => u.replace(/^resolved .*\/dist\//, '')))], ['src/k8s/client.js']);
  });
});
