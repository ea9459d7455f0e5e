// The pull service against the sandbox's real dockerd and containerd (CRI), pulling from registries the test
// starts itself (docker-registry on loopback) through a counting, throttling, stalling loopback proxy.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { ImagePullService, type PullServiceOptions } from '../../src/pull/pull-service.js';
import { ContainerdProgressSource } from '../../src/runtime/containerd/pull-progress.js';
import { readAuthFile } from '../../src/pull/auth.js';
import type { PullEvent } from '../../src/pull/types.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import { removeCriImage } from '../testbed/cri-pods.js';
import { dockerClient } from '../testbed/docker-pods.js';
import { sandboxEnv, type SandboxEnv } from '../testbed/sandbox-env.js';
import { memoryLogger } from '../support/memory-logger.js';
import { requireRuntime } from '../support/require-runtime.js';
import { criTargets } from '../support/runtime-matrix.js';
import { buildImage, buildLayer, pushImage, seededBytes, type BuiltImage } from '../support/registry-images.js';
import { startRegistryProxy, type RegistryProxy } from '../support/registry-proxy.js';
import { freePort, startRegistry, type RegistryServer } from '../support/registry-server.js';

const MiB = 1024 * 1024;

interface Target {
  /** For the suite title: the runtime and its version. */
  name: string;
  kind: 'docker' | 'cri';
  env: SandboxEnv;
  make(): Runtime;
  remove(rt: Runtime, ref: string): Promise<void>;
}

const dockerEnv = sandboxEnv();
const targets: Target[] = [
  {
    name: 'docker',
    kind: 'docker',
    env: dockerEnv,
    make: () => new DockerRuntime(dockerEnv.dockerHost),
    remove: async (rt, ref) => {
      await dockerClient(dockerEnv.dockerHost)
        .getImage(ref)
        .remove({ force: true })
        .catch(() => undefined);
    },
  },
  ...criTargets().map((t) => ({
    name: t.title,
    kind: 'cri' as const,
    env: t.env,
    make: () => new CriRuntime(t.env.criEndpoint),
    remove: async (_rt: Runtime, ref: string) => {
      await removeCriImage(t.env.criEndpoint, ref);
    },
  })),
];

for (const target of targets) {
  describe(`pull service on ${target.name} (real runtime and registry)`, function () {
    this.timeout(60_000);
    const env = target.env;
    let rt: Runtime;
    let registry: RegistryServer;
    let proxy: RegistryProxy;
    let progress: ContainerdProgressSource | undefined;
    const run = randomBytes(4).toString('hex');
    const pulled = new Set<string>();
    const small: Record<string, BuiltImage> = {};

    const newService = (opts: Partial<PullServiceOptions> = {}) =>
      new ImagePullService({
        runtime: rt,
        progressSource: progress,
        metricsRegistry: new Registry(),
        backoff: { initialMs: 200, maxMs: 400, jitter: 0 },
        progressIntervalMs: 50,
        ...opts,
      });

    const smallImage = (name: string): BuiltImage => {
      small[name] ??= buildImage([buildLayer([{ path: `etc/${name}`, data: Buffer.from(`${run}-${name}\n`) }])], `${run}-${name}`);
      return small[name];
    };

    /** Pushes an image to the test registry; returns its reference through the proxy. */
    const push = async (repo: string, tag: string, image: BuiltImage) => {
      await pushImage({ registry: registry.host }, repo, tag, image);
      const ref = `${proxy.host}/${repo}:${tag}`;
      pulled.add(ref);
      return ref;
    };

    before(async function () {
      rt = target.make();
      await requireRuntime(this, `${target.name} runtime of the sandbox`, () => rt.version());
      if (target.kind === 'cri') progress = new ContainerdProgressSource({ address: env.containerdAddress, intervalMs: 250 });
      registry = await startRegistry();
      proxy = await startRegistryProxy(registry.host);
    });

    after(async () => {
      for (const ref of pulled) if (rt) await target.remove(rt, ref);
      progress?.close();
      await proxy?.close();
      await registry?.stop();
      rt?.close();
    });

    it('pulls two images with parallel 1: the second reports Queued, then both are in the store', async () => {
      const a = await push('pull/queue-a', 'v1', smallImage('qa'));
      const b = await push('pull/queue-b', 'v1', smallImage('qb'));
      const events: PullEvent[] = [];
      const res = await newService().pull({ images: [a, b], parallel: 1 }, (e) => events.push(e));
      assert.deepEqual(res.map((e) => e.phase), ['Done', 'Done'], JSON.stringify(res));
      const queued = events.find((e) => e.image === b && e.phase === 'Queued');
      assert.equal(queued?.queuePosition, 1);
      assert.ok(events.findIndex((e) => e.image === b && e.phase === 'Pulling') > events.findIndex((e) => e.image === a && e.phase === 'Done'));
      assert.ok(await rt.inspectImage(a), `${a} in the ${target.name} store`);
      assert.ok(await rt.inspectImage(b), `${b} in the ${target.name} store`);
    });

    it('downloads an image once for two concurrent requests; both see it Done', async () => {
      const img = buildImage(
        [buildLayer([{ path: 'one', data: seededBytes(`${run}-once-1`, 2 * MiB) }]), buildLayer([{ path: 'two', data: seededBytes(`${run}-once-2`, 2 * MiB) }])],
        `${run}-once`,
      );
      const ref = await push('pull/once', 'v1', img);
      const svc = newService();
      const [[a], [b]] = await Promise.all([svc.pull({ images: [ref] }, () => undefined), svc.pull({ images: [ref] }, () => undefined)]);
      assert.equal(a.phase, 'Done', a.error);
      assert.equal(b.phase, 'Done', b.error);
      assert.equal(a.digest, b.digest);
      for (const l of img.layers) assert.equal(proxy.blobGets.get(l.digest), 1, `layer ${l.digest} fetched once`);
    });

    it('reports byte progress that increases while a large layer downloads', async () => {
      const big = buildLayer([{ path: 'big.bin', data: seededBytes(`${run}-big`, 24 * MiB) }]);
      const ref = await push('pull/big', 'v1', buildImage([big], `${run}-big`));
      proxy.setRate(12 * MiB);
      try {
        const seen: PullEvent[] = [];
        const [end] = await newService().pull({ images: [ref] }, (e) => seen.push(e));
        assert.equal(end.phase, 'Done', end.error);
        const mid = seen.filter((e) => (e.phase === 'Pulling' || e.phase === 'Extracting') && e.bytesDone > 0 && e.bytesDone < big.blob.length);
        assert.ok(mid.length >= 3, `several partial progress reports (${seen.map((e) => `${e.phase}:${e.bytesDone}/${e.bytesTotal}`).join(' ')})`);
        for (let i = 1; i < mid.length; i++) assert.ok(mid[i].bytesDone >= mid[i - 1].bytesDone, 'bytes never go back');
        assert.ok(mid.at(-1)!.bytesDone > mid[0].bytesDone, 'bytes increase');
        assert.ok(mid.some((e) => e.bytesTotal >= big.blob.length), 'the layer size is known');
      } finally {
        proxy.setRate(0);
      }
    });

    it('fails a missing tag at once, without retries, saying it is not found', async () => {
      await push('pull/missing', 'v1', smallImage('missing'));
      const ref = `${proxy.host}/pull/missing:nope`;
      const events: PullEvent[] = [];
      const t0 = Date.now();
      const [e] = await newService({ retries: 3, backoff: { initialMs: 2000, jitter: 0 } }).pull({ images: [ref] }, (x) => events.push(x));
      assert.equal(e.phase, 'Failed');
      assert.equal(e.errorKind, 'NotFound', e.error);
      assert.match(e.error, new RegExp(`pull of ${ref.replace(/[.]/g, '\\.')}: image not found`));
      assert.equal(e.attempt, 1);
      assert.equal(events.filter((x) => x.phase === 'Retrying').length, 0);
      assert.ok(Date.now() - t0 < 2000, 'no backoff waited');
    });

    it('retries when the registry is down, then fails with the reason', async () => {
      const ref = `127.0.0.1:${await freePort()}/pull/down:v1`;
      const events: PullEvent[] = [];
      const [e] = await newService({ retries: 2 }).pull({ images: [ref] }, (x) => events.push(x));
      assert.equal(e.phase, 'Failed');
      const trace = events.map((x) => `${x.phase}#${x.attempt}${x.error ? ' ' + x.error : ''}`).join('\n');
      assert.equal(e.attempt, 3, trace);
      assert.equal(events.filter((x) => x.phase === 'Retrying').length, 2, trace);
      assert.match(e.error, /connection refused/);
    });

    it('fires the stall deadline when the registry stops sending mid-layer, and retries as configured', async () => {
      const layer = buildLayer([{ path: 'stall.bin', data: seededBytes(`${run}-stall`, 6 * MiB) }]);
      const ref = await push('pull/stall', 'v1', buildImage([layer], `${run}-stall`));
      proxy.setStall(1 * MiB, 2 * MiB);
      try {
        const events: PullEvent[] = [];
        const [e] = await newService({ stallTimeoutMs: 1500, retries: 1 }).pull({ images: [ref] }, (x) => events.push(x));
        assert.equal(e.phase, 'Failed');
        assert.equal(e.attempt, 2);
        const retry = events.find((x) => x.phase === 'Retrying');
        assert.match(retry?.error ?? '', /stalled: no new bytes for [12] s/);
        assert.equal(e.errorKind, 'DeadlineExceeded', e.error);
      } finally {
        proxy.setStall(0);
      }
    });

    it('pulls a digest reference, verifies it and reports the digest', async () => {
      const img = smallImage('digest');
      await push('pull/digest', 'v1', img);
      const ref = `${proxy.host}/pull/digest@${img.manifestDigest}`;
      pulled.add(ref);
      const [e] = await newService().pull({ images: [ref] }, () => undefined);
      assert.equal(e.phase, 'Done', e.error);
      assert.equal(e.digest, `${proxy.host}/pull/digest@${img.manifestDigest}`);
      const again = await newService().pull({ images: [ref] }, () => undefined);
      assert.equal(again[0].alreadyPresent, true, 'IfNotPresent finds it by digest');
    });

    describe('a registry that requires basic auth', () => {
      let authRegistry: RegistryServer;
      const password = `pw-${randomBytes(8).toString('hex')}`;
      let ref = '';

      before(async () => {
        authRegistry = await startRegistry({ basicAuth: { username: 'puller', password } });
        await pushImage({ registry: authRegistry.host, basicAuth: `puller:${password}` }, 'pull/private', 'v1', smallImage('private'));
        ref = `${authRegistry.host}/pull/private:v1`;
        pulled.add(ref);
      });

      after(async () => {
        await authRegistry?.stop();
      });

      it('fails without credentials saying so, succeeds with an auth file, and never shows the password', async () => {
        const { logger, lines } = memoryLogger();
        const events: PullEvent[] = [];
        const svc = newService({ logger, retries: 2 });
        const [denied] = await svc.pull({ images: [ref] }, (e) => events.push(e));
        assert.equal(denied.phase, 'Failed');
        assert.equal(denied.errorKind, 'Unauthenticated', denied.error);
        assert.match(denied.error, /requires credentials and none were given/);
        assert.equal(denied.attempt, 1, 'no retries for missing credentials');

        const dir = mkdtempSync(path.join(os.tmpdir(), 'pull-auth-'));
        const file = path.join(dir, 'config.json');
        writeFileSync(file, JSON.stringify({ auths: { [`http://${authRegistry.host}/v2/`]: { auth: Buffer.from(`puller:${password}`).toString('base64') } } }));
        const keyring = await readAuthFile(file);
        const [ok] = await svc.pull({ images: [ref], keyring }, (e) => events.push(e));
        assert.equal(ok.phase, 'Done', ok.error);
        assert.ok(await rt.inspectImage(ref));

        const wrong = new Map([[authRegistry.host, { username: 'puller', password: `${password}-wrong` }]]);
        const [bad] = await newService({ logger }).pull({ images: [ref], keyring: wrong, always: true }, (e) => events.push(e));
        assert.equal(bad.errorKind, 'Unauthenticated', bad.error);
        assert.match(bad.error, /rejected the credentials given for it/);
        assert.doesNotMatch(bad.error, /puller/, 'the user name goes to no other caller either');

        const everything = lines.join('\n') + JSON.stringify(events);
        assert.ok(lines.length > 0, 'the service logged');
        assert.ok(!everything.includes(password), 'the password is in no log line and no event');
        assert.ok(!everything.includes(Buffer.from(`puller:${password}`).toString('base64')), 'nor its base64 form');
      });
    });
  });
}
