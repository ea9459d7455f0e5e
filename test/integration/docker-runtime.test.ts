// DockerRuntime against the sandbox's real dockerd and loopback registry (scripts/sandbox up).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { AgentError } from '../../src/errors.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import type { PullProgress, RuntimeEvent } from '../../src/runtime/types.js';
import { dockerClient, DockerPodFixture } from '../testbed/docker-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { requireRuntime } from '../support/require-runtime.js';
import { dockerTargets } from '../support/runtime-matrix.js';

/** Asserts that promise rejects with an AgentError of kind whose message matches text. */
async function rejectsWith(promise: Promise<unknown>, kind: AgentError['kind'], text: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof AgentError, `an AgentError, got ${String(err)}`);
    assert.equal(err.kind, kind, err.message);
    assert.match(err.message, text);
    return true;
  });
}

for (const target of dockerTargets()) {
  const env = { ...target.env, dockerHost: target.dockerHost };
describe(`DockerRuntime against the sandbox's ${target.title}`, function () {
  this.timeout(60_000);
  let rt: DockerRuntime;
  let fixture: DockerPodFixture | undefined;
  let pod: TestPod | undefined;
  let hostDir = '';
  let cacheName = '';
  let cacheId = '';
  const events: RuntimeEvent[] = [];
  const stopEvents = new AbortController();
  let collecting: Promise<void> | undefined;
  const pushedImage = `${env.registry}/inplace/docker-runtime-test:pull`;

  before(async function () {
    rt = new DockerRuntime(env.dockerHost);
    await requireRuntime(this, `${target.title} at ${env.dockerHost}`, () => rt.version());
    collecting = (async () => {
      for await (const e of rt.events(stopEvents.signal)) events.push(e);
    })();
    fixture = new DockerPodFixture(env.dockerHost);
    hostDir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-docker-it-'));
    pod = await fixture.create({
      name: 'docker-it',
      containers: [
        { name: 'app', image: env.images.appV1 },
        { name: 'sidecar', image: env.images.appV1, env: { ROLE: 'sidecar' }, annotations: { 'example.com/note': 'kept' } },
      ],
      volume: { hostPath: hostDir, mountPath: '/shared' },
    });
    // A third container made the plain Docker way: no name label, an anonymous volume at /cache.
    cacheName = `${pod.name.slice('docker/'.length)}-cache`;
    const c = await dockerClient(env.dockerHost).createContainer({
      name: cacheName,
      Image: env.images.appV1,
      Volumes: { '/cache': {} },
      HostConfig: { NetworkMode: `container:${pod.podId}`, Binds: [`${hostDir}:/shared`] },
    });
    await c.start();
    cacheId = c.id;
  });

  after(async () => {
    stopEvents.abort();
    await collecting?.catch(() => undefined);
    if (pod) await fixture?.remove(pod);
    fixture?.close();
    await dockerClient(env.dockerHost).getImage(pushedImage).remove().catch(() => undefined);
    if (hostDir) fs.rmSync(hostDir, { recursive: true, force: true });
    rt?.close();
  });

  it('reports its version', async () => {
    const v = await rt.version();
    assert.equal(v.kind, 'docker');
    assert.match(v.apiVersion, /^1\.\d+$/);
    assert.equal(v.endpoint, env.dockerHost);
  });

  it('groups the sandbox and the containers that joined its network into one pod', async () => {
    const p = await rt.getPod(pod!.podId);
    assert.equal(p.id, pod!.podId);
    assert.equal(p.name, pod!.name);
    assert.match(p.name, /^docker\/docker-it-[0-9a-f]{6}$/);
    assert.equal(p.namespace, 'docker');
    assert.equal(p.state, 'ready');
    assert.equal(p.ip, '', 'a --network none sandbox has no IP');
    assert.ok((await rt.listPods()).some((x) => x.id === pod!.podId));

    const cs = await rt.listContainers({ podId: pod!.podId });
    assert.deepEqual(cs.map((c) => c.name).sort(), ['app', cacheName, 'sidecar'].sort());
    assert.ok(!cs.some((c) => c.id === pod!.podId), 'the sandbox is not one of its containers');
    for (const c of cs) {
      assert.equal(c.podId, pod!.podId);
      assert.equal(c.state, 'running');
      assert.equal(c.image, env.images.appV1);
      assert.match(c.imageId, /^sha256:/);
    }
    assert.equal(cs.find((c) => c.name === 'app')?.id, pod!.containerIds.app);
    assert.equal(cs.find((c) => c.name === 'sidecar')?.annotations['example.com/note'], 'kept');
    assert.equal((await rt.listContainers({ podId: pod!.podId, runningOnly: true })).length, 3);
  });

  it('inspects a container with its mounts, anonymous volume by name, and its whole inspect JSON', async () => {
    const d = await rt.inspectContainer(cacheId);
    assert.equal(d.id, cacheId);
    assert.equal(d.name, cacheName, 'without the name label the Docker name is the name in the pod');
    assert.equal(d.runtimeName, cacheName);
    assert.equal(d.podId, pod!.podId);
    assert.equal(d.state, 'running');
    assert.ok(d.startedAt && d.startedAt.getTime() > 0);
    assert.equal(d.finishedAt, undefined);
    const shared = d.mounts.find((m) => m.containerPath === '/shared');
    assert.deepEqual(shared, { source: hostDir, containerPath: '/shared', readonly: false, type: 'bind' });
    const cache = d.mounts.find((m) => m.containerPath === '/cache');
    assert.equal(cache?.type, 'volume');
    assert.match(cache?.source ?? '', /^[0-9a-f]{64}$/);
    assert.equal((d.spec.native as { Id: string }).Id, cacheId);
    assert.deepEqual(d.spec.command, ['/app/run.sh']);
    assert.equal(d.spec.image, env.images.appV1);

    const sidecar = await rt.inspectContainer(pod!.containerIds.sidecar);
    assert.equal(sidecar.name, 'sidecar');
    assert.ok(sidecar.spec.env.some((e) => e.key === 'ROLE' && e.value === 'sidecar'));
  });

  it('pulls an image from the loopback registry, reporting layer progress, and returns its id and digest', async function () {
    // A fresh image, so that one layer really downloads: a random 1 MiB file committed on top of app:v1.
    const docker = dockerClient(env.dockerHost);
    const seed = await docker.createContainer({ Image: env.images.appV1, Cmd: ['/bin/sh', '-c', 'head -c 1048576 /dev/urandom > /blob'] });
    try {
      await seed.start();
      await seed.wait();
      const [repo, tag] = [pushedImage.slice(0, pushedImage.lastIndexOf(':')), 'pull'];
      await seed.commit({ repo, tag });
    } finally {
      await seed.remove({ force: true });
    }
    const push = (await docker.getImage(pushedImage).push({ authconfig: {} })) as Readable; // dockerd wants the header
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(push, (err: Error | null, out: { error?: string }[]) => {
        const failed = out.find((m) => m.error);
        if (err || failed) reject(err ?? new Error(failed?.error));
        else resolve();
      }),
    );
    await docker.getImage(pushedImage).remove();
    assert.equal(await rt.inspectImage(pushedImage), undefined);

    const progress: PullProgress[] = [];
    const pulled = await rt.pullImage(pushedImage, { onProgress: (p) => progress.push(p), timeoutMs: 30_000 });
    assert.match(pulled.id, /^sha256:[0-9a-f]{64}$/);
    assert.match(pulled.digest, new RegExp(`^${env.registry}/inplace/docker-runtime-test@sha256:[0-9a-f]{64}$`));
    const img = await rt.inspectImage(pushedImage);
    assert.equal(img?.id, pulled.id);
    assert.ok(img?.repoTags.includes(pushedImage));
    assert.ok(img?.repoDigests.includes(pulled.digest));
    assert.ok(progress.length > 0, 'progress was reported');
    const last = progress[progress.length - 1]!;
    assert.ok(last.layers.some((l) => l.status === 'exists'), 'the app:v1 layers were already there');
    if (target.engine === 'podman') {
      // Podman's stream names each new blob once downloaded, with no byte counts and no extraction step.
      const fresh = last.layers.filter((l) => l.status === 'downloaded');
      assert.ok(fresh.length > 0, `a layer was pulled: ${JSON.stringify(last.layers)}`);
      assert.ok(!progress.some((p) => p.extracting), 'no extraction reported');
    } else {
      const fresh = last.layers.find((l) => l.status === 'done');
      assert.ok(fresh, `one layer was pulled: ${JSON.stringify(last.layers)}`);
      assert.ok(fresh.total > 1_000_000 && fresh.current === fresh.total, JSON.stringify(fresh));
      assert.ok(progress.some((p) => p.extracting), 'extraction was reported');
    }
    assert.equal(last.extracting, false);
    assert.ok((await rt.listImages()).some((i) => i.id === pulled.id));
  });

  it('replaces a container in place: new instance from the inspected config, stop, swap names, start', async () => {
    const podBefore = await rt.getPod(pod!.podId);
    const siblingsBefore = await Promise.all(['app', 'sidecar'].map((n) => rt.inspectContainer(pod!.containerIds[n]!)));
    const old = await rt.inspectContainer(cacheId);
    const written = await rt.exec(cacheId, ['/bin/sh', '-c', 'echo host-path > /shared/f && echo anonymous > /cache/f'], 10);
    assert.equal(written.exitCode, 0, written.stderr);

    // The replacement exists, created, while the old instance still runs (its image is pulled first, as the
    // engine does: the sandbox starts with an empty image store).
    await rt.pullImage(env.images.appV2);
    const tempName = `${cacheName}-next`;
    const newId = await rt.createContainer(pod!.podId, { ...old.spec, image: env.images.appV2 }, tempName);
    const created = await rt.inspectContainer(newId);
    assert.equal(created.state, 'created');
    assert.equal(created.runtimeName, tempName);
    assert.equal(created.podId, pod!.podId);
    assert.equal((await rt.inspectContainer(cacheId)).state, 'running');
    await rejectsWith(
      rt.createContainer(pod!.podId, old.spec, tempName),
      'FailedPrecondition',
      new RegExp(`container "${tempName}"`),
    );

    await rt.stopContainer(cacheId, 5);
    const stopped = await rt.inspectContainer(cacheId);
    assert.equal(stopped.state, 'exited');
    assert.equal(stopped.exitCode, 0, 'the app exits 0 on SIGTERM');
    assert.equal(stopped.reason, 'Completed');
    await rt.stopContainer(cacheId, 5); // idempotent
    await rejectsWith(rt.exec(cacheId, ['true'], 5), 'FailedPrecondition', new RegExp(`container "${cacheId}"`));

    await rt.renameContainer(cacheId, `${cacheName}-old`);
    await rt.renameContainer(newId, cacheName);
    await rt.startContainer(newId);
    await rt.startContainer(newId); // already running: fine

    const now = await rt.inspectContainer(newId);
    assert.equal(now.state, 'running');
    assert.equal(now.name, cacheName);
    assert.equal(now.image, env.images.appV2);
    assert.equal(now.labels['org.opencontainers.image.version'], 'v2', "the new image's labels, not the old image's");
    assert.ok(now.spec.env.some((e) => e.key === 'APP_VERSION' && e.value === 'v2'), "the new image's env");
    assert.deepEqual(
      now.mounts.map((m) => `${m.type}:${m.source}:${m.containerPath}`).sort(),
      old.mounts.map((m) => `${m.type}:${m.source}:${m.containerPath}`).sort(),
      'same host path and the same (formerly anonymous) volume',
    );

    const podAfter = await rt.getPod(pod!.podId);
    assert.equal(podAfter.id, podBefore.id);
    assert.equal(podAfter.ip, podBefore.ip);
    for (const before of siblingsBefore) {
      const after = await rt.inspectContainer(before.id);
      assert.equal(after.state, 'running', `${before.name} still runs`);
      assert.equal(after.startedAt?.getTime(), before.startedAt?.getTime(), `${before.name} was not restarted`);
    }
    assert.deepEqual(
      (await rt.listContainers({ podId: pod!.podId, runningOnly: true })).map((c) => c.id).sort(),
      [pod!.containerIds.app, pod!.containerIds.sidecar, newId].sort(),
    );

    const read = await rt.exec(newId, ['/bin/sh', '-c', 'cat /app/version /shared/f /cache/f'], 10);
    assert.deepEqual(read, { exitCode: 0, stdout: 'v2\nhost-path\nanonymous\n', stderr: '' });

    await rt.removeContainer(cacheId);
    await rt.removeContainer(cacheId); // idempotent
    await rejectsWith(rt.inspectContainer(cacheId), 'NotFound', new RegExp(`container "${cacheId}" not found`));
    const again = await rt.exec(newId, ['cat', '/cache/f'], 10);
    assert.equal(again.stdout, 'anonymous\n', 'removing the old instance kept the volume');

    // The events of all this, with the pod resolved (also for the removed container).
    const want: [string, RuntimeEvent['type']][] = [
      [newId, 'created'],
      [cacheId, 'stopped'],
      [newId, 'started'],
      [cacheId, 'deleted'],
    ];
    const deadline = Date.now() + 5000;
    const seen = (): RuntimeEvent[] =>
      want.map(([id, type]) => events.find((e) => e.containerId === id && e.type === type)).filter((e) => e !== undefined);
    while (seen().length < want.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(seen().length, want.length, `events seen: ${JSON.stringify(events)}`);
    for (const e of seen()) assert.equal(e.podId, pod!.podId, JSON.stringify(e));
    const times = seen().map((e) => e.at.getTime());
    assert.deepEqual(times, [...times].sort((a, b) => a - b), 'in order');
    assert.ok(events.some((e) => e.containerId === cacheId && e.type === 'started'), 'events from before the restart too');
  });

  it('runs commands: stdout, stderr, exit code, large output, timeout, unknown container', async () => {
    const app = pod!.containerIds.app!;
    const r = await rt.exec(app, ['/bin/sh', '-c', 'echo out; echo err >&2; exit 3'], 10);
    assert.deepEqual(r, { exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
    const big = await rt.exec(app, ['/bin/sh', '-c', 'head -c 200000 /dev/zero | tr "\\0" x'], 10);
    assert.equal(big.stdout.length, 200_000);
    await rejectsWith(rt.exec(app, ['sleep', '5'], 1), 'DeadlineExceeded', /exec "sleep 5" in container ".*" exceeded 1 s/);
    await rejectsWith(rt.exec(`${'0'.repeat(12)}nope`, ['true'], 1), 'NotFound', /container "0+nope" not found/);
  });

  it('maps errors to kinds with messages that name the thing', async () => {
    await rejectsWith(rt.inspectContainer('no-such-container-4711'), 'NotFound', /container "no-such-container-4711" not found/);
    await rejectsWith(rt.startContainer('no-such-container-4711'), 'NotFound', /container "no-such-container-4711" not found/);
    await rejectsWith(rt.stopContainer('no-such-container-4711', 1), 'NotFound', /container "no-such-container-4711" not found/);
    await rt.removeContainer('no-such-container-4711');
    await rejectsWith(rt.getPod('no-such-pod-4711'), 'NotFound', /pod "no-such-pod-4711" not found/);
    await rejectsWith(rt.getPod(pod!.containerIds.app!), 'NotFound', /pod ".*" not found/);
    const spec = (await rt.inspectContainer(pod!.containerIds.app!)).spec;
    await rejectsWith(rt.createContainer('no-such-pod-4711', spec), 'NotFound', /pod "no-such-pod-4711" not found/);
    const notPulled = `${env.registry}/inplace/app:not-pulled`;
    await rejectsWith(rt.createContainer(pod!.podId, { ...spec, image: notPulled }, 'never'), 'NotFound', new RegExp(`image "${notPulled}" not found`));
    await rejectsWith(rt.createContainer(pod!.podId, { ...spec, native: undefined }), 'InvalidArgument', /carries no Docker inspect data/);
    await rejectsWith(
      rt.renameContainer(pod!.containerIds.app!, (await rt.inspectContainer(pod!.containerIds.sidecar!)).runtimeName!),
      'FailedPrecondition',
      /rename of container ".*" to ".*-sidecar"/,
    );

    const missingTag = `${env.registry}/inplace/app:does-not-exist`;
    await rejectsWith(rt.pullImage(missingTag), 'NotFound', new RegExp(`image "${missingTag}"`));
    const missingRepo = `${env.registry}/inplace/no-such-repo-4711:1`;
    await rejectsWith(rt.pullImage(missingRepo), 'NotFound', new RegExp(`image "${missingRepo}"`));
    assert.equal(await rt.inspectImage(missingTag), undefined);

    const socket = path.join(os.tmpdir(), `no-docker-${randomBytes(4).toString('hex')}.sock`);
    const gone = new DockerRuntime(`unix://${socket}`);
    await rejectsWith(gone.version(), 'Unavailable', new RegExp(`unix://${socket}.*unreachable \\(ENOENT\\)`));
    await rejectsWith(gone.listPods(), 'Unavailable', new RegExp(socket));
    gone.close();
  });

  it('reports the image filesystem', async () => {
    const usage = await rt.imageFsUsage();
    assert.equal(usage.mountpoint, target.dataRoot);
    assert.ok(usage.availableBytes > 0);
    assert.ok(usage.usedBytes > 0);
    assert.ok((await rt.inspectImage(env.images.appV1))?.repoTags.includes(env.images.appV1));
  });
});
}
