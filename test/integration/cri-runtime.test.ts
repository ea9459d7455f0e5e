// CriRuntime against the sandbox's real containerd (scripts/sandbox up): a pod with two containers sharing a
// host directory; one container is replaced in place by a second instance created from its inspected config.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AgentError, type ErrorKind } from '../../src/errors.js';
import { CriClient } from '../../src/runtime/cri/client.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import type { RuntimeEvent } from '../../src/runtime/types.js';
import { createCriPod, removeCriPod, TEST_POD_LABEL } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { requireRuntime } from '../support/require-runtime.js';
import { criTargets } from '../support/runtime-matrix.js';

/** A process that appends a line to the shared volume when it starts and exits 0 on SIGTERM. */
const LOOP = (name: string) => [
  '/bin/sh',
  '-c',
  `trap 'exit 0' TERM; echo "${name} started" >> /data/${name}-starts; while :; do sleep 1 & wait $!; done`,
];

/** Asserts that p rejects with an AgentError of kind whose message contains every part. */
async function rejectsWith(p: Promise<unknown>, kind: ErrorKind, ...parts: string[]): Promise<AgentError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof AgentError, `expected an AgentError, got ${String(err)}`);
    assert.equal(err.kind, kind, err.message);
    for (const part of parts) assert.ok(err.message.includes(part), `"${err.message}" should name ${part}`);
    return err;
  }
  assert.fail(`expected ${kind}, but it succeeded`);
}

for (const target of criTargets()) {
  describe(`CriRuntime against ${target.title}`, function () {
    this.timeout(120_000);
    const env = target.env;
    const rt = new CriRuntime(env.criEndpoint, { eventPollIntervalMs: 200 });
    // A CRI client of the test's own, for calls the Runtime interface does not make.
    const cri = new CriClient(env.criEndpoint);
    const volume = mkdtempSync(path.join(tmpdir(), 'inplace-cri-it-vol-'));
    const podName = `cri-it-${randomBytes(3).toString('hex')}`;
    const events: RuntimeEvent[] = [];
    const stopEvents = new AbortController();
    let eventError: unknown;
    let collecting: Promise<void> | undefined;
    let pod: TestPod;

    before(async function () {
      await requireRuntime(this, `containerd (CRI) at ${env.criEndpoint}`, () => rt.version());
      collecting = (async () => {
        try {
          for await (const ev of rt.events(stopEvents.signal)) events.push(ev);
        } catch (err) {
          eventError = err;
        }
      })();
      pod = await createCriPod(env.criEndpoint, {
        name: podName,
        containers: [
          { name: 'app', image: env.images.busybox, command: LOOP('app') },
          { name: 'sidecar', image: env.images.busybox, command: LOOP('sidecar') },
        ],
        volume: { hostPath: volume, mountPath: '/data' },
      });
    });

    after(async () => {
      stopEvents.abort();
      await collecting;
      if (pod) await removeCriPod(env.criEndpoint, pod.podId);
      rt.close();
      cri.close();
      rmSync(volume, { recursive: true, force: true });
    });

    it('reports containerd and the CRI version', async () => {
      const v = await rt.version();
      assert.equal(v.kind, 'cri');
      assert.equal(v.name, 'containerd');
      assert.equal(v.apiVersion, 'v1');
      assert.equal(v.endpoint, env.criEndpoint);
    });

    it('lists the pod with its CNI IP', async () => {
      const found = (await rt.listPods()).find((p) => p.id === pod.podId);
      assert.ok(found, `pod ${pod.podId} listed`);
      assert.equal(found.name, `default/${podName}`);
      assert.equal(found.state, 'ready');
      assert.match(found.ip, /^\d+\.\d+\.\d+\.\d+$/);
      assert.deepEqual(await rt.getPod(pod.podId), found);
    });

    it('lists and inspects both containers with the shared mount', async () => {
      const list = await rt.listContainers({ podId: pod.podId });
      assert.deepEqual(list.map((c) => c.name).sort(), ['app', 'sidecar']);
      for (const c of list) {
        assert.equal(c.id, pod.containerIds[c.name]);
        assert.equal(c.state, 'running');
        assert.equal(c.podId, pod.podId);
        assert.ok(c.startedAt, `${c.name} has a start time`);
        assert.deepEqual(c.mounts, [{ source: volume, containerPath: '/data', readonly: false, type: 'bind' }]);
      }
      const d = await rt.inspectContainer(pod.containerIds.app);
      assert.equal(d.name, 'app');
      assert.equal(d.attempt, 0);
      assert.equal(d.image, env.images.busybox);
      assert.match(d.imageId, /^sha256:[0-9a-f]{64}$/);
      assert.deepEqual(d.spec.command, LOOP('app'));
      assert.equal(d.spec.image, env.images.busybox);
      assert.equal(d.spec.labels[TEST_POD_LABEL], 'true', 'labels of the creation config are kept');
      assert.deepEqual(d.spec.mounts, d.mounts);
    });

    it('pulls an image from the loopback registry and reports its id and digest', async () => {
      const pulled = await rt.pullImage(env.images.appV2);
      assert.match(pulled.id, /^sha256:[0-9a-f]{64}$/);
      assert.match(pulled.digest, new RegExp(`^${env.registry.replace(/\./g, '\\.')}/inplace/app@sha256:[0-9a-f]{64}$`));
      const img = await rt.inspectImage(env.images.appV2);
      assert.equal(img?.id, pulled.id);
      assert.ok(img?.repoTags.includes(env.images.appV2));
      assert.ok((await rt.listImages()).some((i) => i.id === pulled.id));
      assert.equal(await rt.inspectImage(`${env.registry}/inplace/never-pushed:1`), undefined);
    });

    it('reports the image filesystem with free bytes', async () => {
      const fs = await rt.imageFsUsage();
      assert.ok(fs.mountpoint.startsWith('/'));
      assert.ok(fs.usedBytes > 0);
      assert.ok(fs.availableBytes > 0);
    });

    it('execs a command and returns its exit code and output', async () => {
      const r = await rt.exec(pod.containerIds.sidecar, ['/bin/sh', '-c', 'echo out; echo err >&2; exit 3'], 10);
      assert.deepEqual(r, { exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
    });

    it('refuses a second container with the same name and attempt while the first exists', async () => {
      const d = await rt.inspectContainer(pod.containerIds.app);
      await rejectsWith(rt.createContainer(pod.podId, d.spec), 'FailedPrecondition', 'container "app" (attempt 0)', 'is reserved');
    });

    it('replaces one container in place: the pod, its IP, the sibling and the volume stay', async () => {
      const oldId = pod.containerIds.app;
      const sidecarId = pod.containerIds.sidecar;
      const podBefore = await rt.getPod(pod.podId);
      const sidecarBefore = await rt.inspectContainer(sidecarId);
      const old = await rt.inspectContainer(oldId);

      // 1. The first instance leaves a file on the shared volume.
      const token = randomBytes(8).toString('hex');
      assert.equal((await rt.exec(oldId, ['/bin/sh', '-c', `echo ${token} > /data/handoff`], 10)).exitCode, 0);

      // 2. The second instance is created from the inspected config while the first still runs; the spec
      //    goes through JSON first, as it does when the engine journals it.
      const spec = JSON.parse(JSON.stringify(old.spec)) as typeof old.spec;
      const newId = await rt.createContainer(pod.podId, { ...spec, attempt: old.attempt + 1 });
      assert.notEqual(newId, oldId);
      const created = await rt.inspectContainer(newId);
      assert.equal(created.state, 'created');
      assert.equal(created.name, 'app');
      assert.equal(created.attempt, 1);
      assert.equal(created.podId, pod.podId);
      assert.equal((await rt.inspectContainer(oldId)).state, 'running');

      // 3. The first stops within its grace period (it exits 0 on SIGTERM); stopping it again is fine.
      const t0 = Date.now();
      await rt.stopContainer(oldId, 10);
      assert.ok(Date.now() - t0 < 10_000, 'stopped on SIGTERM, not killed at the end of the grace period');
      const stopped = await rt.inspectContainer(oldId);
      assert.equal(stopped.state, 'exited');
      assert.equal(stopped.exitCode, 0);
      await rt.stopContainer(oldId, 10);

      // 4. The second starts.
      await rt.startContainer(newId);
      const running = await rt.inspectContainer(newId);
      assert.equal(running.state, 'running');
      assert.deepEqual(running.spec.command, old.spec.command);
      assert.deepEqual(running.mounts, old.mounts);

      // 5. Nothing else moved.
      const podAfter = await rt.getPod(pod.podId);
      assert.equal(podAfter.ip, podBefore.ip);
      assert.equal(podAfter.state, 'ready');
      const sidecarAfter = await rt.inspectContainer(sidecarId);
      assert.equal(sidecarAfter.id, sidecarBefore.id);
      assert.equal(sidecarAfter.state, 'running');
      assert.equal(sidecarAfter.startedAt?.getTime(), sidecarBefore.startedAt?.getTime());

      // 6. The second reads what the first wrote; both instances started once each.
      const read = await rt.exec(newId, ['cat', '/data/handoff'], 10);
      assert.deepEqual(read, { exitCode: 0, stdout: `${token}\n`, stderr: '' });
      assert.equal(readFileSync(path.join(volume, 'app-starts'), 'utf8'), 'app started\napp started\n');

      // 7. The old container goes; removing it twice is fine.
      await rt.removeContainer(oldId);
      await rt.removeContainer(oldId);
      await rejectsWith(rt.inspectContainer(oldId), 'NotFound', oldId);
      pod.containerIds.app = newId;

      // 8. The event stream saw all of it (containerd 2.x: GetContainerEvents; 1.6 has none: the ListContainers poll).
      const want = [`${newId}:created`, `${newId}:started`, `${oldId}:stopped`, `${oldId}:deleted`];
      const seen = () => new Set(events.filter((e) => e.podId === pod.podId).map((e) => `${e.containerId}:${e.type}`));
      const deadline = Date.now() + 10_000;
      while (!want.every((w) => seen().has(w)) && Date.now() < deadline && !eventError) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(eventError, undefined);
      assert.deepEqual(want.filter((w) => !seen().has(w)), [], `events seen: ${[...seen()].join(', ')}`);
      assert.ok(!seen().has(`${sidecarId}:stopped`), 'the sibling did not stop');
      const order = events.map((e) => `${e.containerId}:${e.type}`);
      assert.ok(order.indexOf(`${newId}:created`) < order.indexOf(`${newId}:started`));
    });

    it('a container it created is inspected from the config it was created with: the same detail the verbose status gives', async () => {
      // pod.containerIds.app was created by rt (the test above); a runtime object of its own has not seen it.
      const fresh = new CriRuntime(env.criEndpoint);
      try {
        const id = pod.containerIds.app;
        const [remembered, verbose] = await Promise.all([rt.inspectContainer(id), fresh.inspectContainer(id)]);
        // Proto3 leaves out defaults on the wire: compare with empty and zero values dropped, keys sorted.
        const normal = (v: unknown): unknown => {
          if (Array.isArray(v)) return v.map(normal);
          if (v && typeof v === 'object' && !(v instanceof Date)) {
            const out: Record<string, unknown> = {};
            for (const k of Object.keys(v).sort()) {
              const x = normal((v as Record<string, unknown>)[k]);
              const empty = x === undefined || x === null || x === '' || x === 0 || x === '0' || x === false || (Array.isArray(x) && x.length === 0) || (typeof x === 'object' && !(x instanceof Date) && Object.keys(x as object).length === 0);
              if (!empty) out[k] = x;
            }
            return out;
          }
          return v;
        };
        assert.equal(remembered.id, id);
        assert.deepEqual(normal(remembered), normal(verbose));
        assert.ok((remembered.spec.command ?? []).length > 0, 'the spec carries the command it was created with');
        // Removed: forgotten, and NotFound as before.
        const other = await rt.createContainer(pod.podId, { ...remembered.spec, attempt: remembered.attempt + 1 });
        assert.equal((await rt.inspectContainer(other)).attempt, remembered.attempt + 1);
        await rt.removeContainer(other);
        await rejectsWith(rt.inspectContainer(other), 'NotFound', other);
      } finally {
        fresh.close();
      }
    });

    if (target.major === 2) {
      // containerd 2.x queues the events that happen while nobody subscribes (up to 5 minutes) and hands them
      // to the next subscriber, once. A subscriber that went away still takes the next event (containerd
      // notices the closed stream only when it sends on it): that one is lost.
      it('GetContainerEvents: a container created while subscribed is reported as created, then removed', async () => {
        stopEvents.abort();
        await collecting;
        const d = await rt.inspectContainer(pod.containerIds.sidecar);
        const stop = new AbortController();
        const timer = setTimeout(() => stop.abort(), 15_000);
        const seen: string[] = [];
        let id = '';
        try {
          const events = cri.containerEvents(stop.signal)[Symbol.asyncIterator]();
          const first = events.next(); // the stream is open once the first read is under way
          await new Promise((r) => setTimeout(r, 300));
          id = await rt.createContainer(pod.podId, { ...d.spec, attempt: d.attempt + 8 });
          await rt.removeContainer(id);
          for (let next = first; ; next = events.next()) {
            const r = await next;
            if (r.done) break;
            if (r.value.containerId === id) seen.push(String(r.value.containerEventType));
            if (seen.includes('CONTAINER_DELETED_EVENT')) break;
          }
        } finally {
          clearTimeout(timer);
          stop.abort();
        }
        assert.deepEqual(seen.filter((t) => t === 'CONTAINER_CREATED_EVENT' || t === 'CONTAINER_DELETED_EVENT'), ['CONTAINER_CREATED_EVENT', 'CONTAINER_DELETED_EVENT']);
      });
    } else {
      it('has no GetContainerEvents (containerd 1.6 answers UNIMPLEMENTED): events come from the ListContainers poll', async () => {
        const stop = new AbortController();
        try {
          await assert.rejects(
            (async () => {
              for await (const ev of cri.containerEvents(stop.signal)) assert.fail(`an event from 1.6: ${JSON.stringify(ev)}`);
            })(),
            (err: unknown) => AgentError.is(err, 'FailedPrecondition') && /GetContainerEvents/.test(err.message),
          );
        } finally {
          stop.abort();
        }
      });
    }

    describe('errors name the thing', () => {
      const unknownId = 'f'.repeat(64);

      it('an unknown container is NotFound', async () => {
        await rejectsWith(rt.inspectContainer(unknownId), 'NotFound', `container "${unknownId}" not found`);
        await rejectsWith(rt.startContainer(unknownId), 'NotFound', `container "${unknownId}" not found`);
        await rt.removeContainer(unknownId);
      });

      it('an unknown pod is NotFound', async () => {
        await rejectsWith(rt.getPod(unknownId), 'NotFound', `pod "${unknownId}" not found`);
      });

      it('an image that does not exist is NotFound', async () => {
        const ref = `${env.registry}/inplace/does-not-exist:1`;
        await rejectsWith(rt.pullImage(ref), 'NotFound', `image "${ref}" not found`);
      });

      it('an unreachable socket is Unavailable naming the endpoint', async () => {
        const endpoint = `unix://${path.join(volume, 'no-such.sock')}`;
        const gone = new CriRuntime(endpoint);
        try {
          await rejectsWith(gone.version(), 'Unavailable', endpoint);
        } finally {
          gone.close();
        }
      });
    });
  });
}
