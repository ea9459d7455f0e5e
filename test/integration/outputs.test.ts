// What inplacectl and the agent API say is true: fields that apply and nothing invented, reasons as fields,
// id prefixes as `pods` prints them, clear refusals; a cancel that reaches a running pull; planning that
// asks the runtime about the pod's containers only. Against the sandbox's real containerd (CRI).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AgentClient } from '../../src/api/client.js';
import type { OperationView } from '../../src/api/convert.js';
import { systemClock } from '../../src/clock.js';
import { Engine } from '../../src/engine/engine.js';
import { Journal } from '../../src/engine/journal.js';
import type { ContainerFilter } from '../../src/runtime/runtime.js';
import { CriClient } from '../../src/runtime/cri/client.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { CriPodFixture, removeCriImage } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { memoryLogger } from '../support/memory-logger.js';
import { buildImage, buildLayer, pushImage, seededBytes } from '../support/registry-images.js';
import { startRegistryProxy, type RegistryProxy } from '../support/registry-proxy.js';
import { startRegistry, type RegistryServer } from '../support/registry-server.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();
const MiB = 1024 * 1024;

/** Watches an operation until it ends or ms pass; resolves with the last record seen. */
async function watchUntilEnd(c: AgentClient, id: string, ms: number): Promise<OperationView> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), ms);
  let last: OperationView | undefined;
  try {
    for await (const op of c.watchOperation(id, stop.signal)) {
      last = op;
      if (['Succeeded', 'Failed', 'RolledBack', 'Cancelled'].includes(op.state)) break;
    }
  } catch (err) {
    if (!stop.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
  }
  assert.ok(last, `operation ${id} was seen`);
  return last;
}

describe('truthful outputs (containerd 1.6 CRI, real agent)', function () {
  this.timeout(120_000);
  let rt: CriRuntime;
  let fixture: CriPodFixture;
  let agent: AgentProcess;
  const pods: TestPod[] = [];
  const run = randomBytes(3).toString('hex');

  const onePod = async (name: string): Promise<TestPod> => {
    const pod = await fixture.create({ name: `${name}-${run}`, namespace: 'outputs', containers: [{ name: 'app', image: env.images.appV1 }] });
    pods.push(pod);
    return pod;
  };

  before(async function () {
    rt = new CriRuntime(env.criEndpoint);
    await requireRuntime(this, 'containerd CRI of the sandbox', () => rt.version());
    fixture = new CriPodFixture(env.criEndpoint);
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--min-ready', '300ms', '--grace', '2s']);
  });

  after(async () => {
    await agent?.stop();
    for (const p of pods) await fixture?.remove(p).catch(() => undefined);
    fixture?.close();
    rt?.close();
  });

  it('-o json shows what was requested and applied, and no value that was not set', async () => {
    const pod = await onePod('json');
    const res = await ctl(agent.socket, '-o', 'json', 'restart', pod.name, 'app', '--grace', '3s');
    assert.equal(res.code, 0, res.stderr + agent.log());
    const op = JSON.parse(res.stdout) as Record<string, unknown> & { requested: object; applied: object; containers: Record<string, unknown>[]; podAfter: { podId: string; podIp: string } };
    assert.equal(op.state, 'Succeeded');
    assert.deepEqual(op.requested, { graceSeconds: 3 });
    assert.deepEqual(op.applied, { graceSeconds: 3, minReadyMs: 300, timeoutMs: 600_000 });
    for (const key of ['newAttempt', 'exitCode', 'rollbackId', 'error', 'reason']) assert.ok(!(key in op.containers[0]), `no ${key} on a container that succeeded`);
    assert.ok(typeof op.containers[0].downtimeMs === 'number', 'the downtime is there once measured');
    for (const key of ['error', 'errorKind', 'reason', 'request']) assert.ok(!(key in op), `no ${key} on a success`);
    const ip = (await rt.getPod(pod.podId)).ip;
    assert.ok(ip, 'a CRI pod has an IP');
    assert.deepEqual(op.podAfter, { podId: pod.podId, podIp: ip }, 'the pod was read again after the restart');
  });

  it('ops --pod takes the id prefix that pods prints; get refuses a prefix under 6 characters and says so', async () => {
    const pod = await onePod('prefix');
    const done = await ctl(agent.socket, '-o', 'json', 'restart', pod.name, 'app', '--min-ready', '0');
    assert.equal(done.code, 0, done.stderr);
    const id = (JSON.parse(done.stdout) as { id: string }).id;
    const listed = await ctl(agent.socket, 'pods');
    assert.match(listed.stdout, new RegExp(pod.podId.slice(0, 12)), 'pods prints the 12-character id');
    for (const prefix of [pod.podId.slice(0, 12), pod.podId.slice(0, 6)]) {
      const ops = await ctl(agent.socket, 'ops', '--pod', prefix);
      assert.equal(ops.code, 0, ops.stderr);
      assert.match(ops.stdout, new RegExp(id.slice(0, 8)), `ops --pod ${prefix} lists the pod's operation`);
    }
    const short = await ctl(agent.socket, 'get', id.slice(0, 3));
    assert.equal(short.code, 2, 'bad usage');
    assert.match(short.stderr, new RegExp(`operation id "${id.slice(0, 3)}" is too short: give the whole id or a prefix of at least 6 characters`));
    const ok = await ctl(agent.socket, 'get', id.slice(0, 6));
    assert.equal(ok.code, 0, ok.stderr);
  });

  it('a refusal and a failure carry their reason as a field', async () => {
    const pod = await onePod('reason');
    const refused = await ctl(agent.socket, '-o', 'json', 'restart', pod.name, 'nosuch');
    assert.equal(refused.code, 1);
    assert.equal((JSON.parse(refused.stdout) as { reason: string }).reason, 'ContainerNotFound');
    const failed = await ctl(agent.socket, '-o', 'json', 'restart', pod.name, 'app', '--image', `app=${env.images.crash}`);
    assert.equal(failed.code, 1);
    const op = JSON.parse(failed.stdout) as { state: string; reason: string; containers: { reason: string; exitCode: number }[] };
    assert.equal(op.state, 'Failed');
    assert.equal(op.reason, 'ReplacementExitedDuringMinReady');
    assert.equal(op.containers[0].reason, 'ReplacementExitedDuringMinReady');
    assert.equal(op.containers[0].exitCode, 3);
  });

  it('duplicate container names and --image for a container not restarted are bad usage (exit 2)', async () => {
    const dup = await ctl(agent.socket, 'restart', 'outputs/any', 'app', 'app');
    assert.equal(dup.code, 2, dup.stderr);
    assert.match(dup.stderr, /container "app" is named twice/);
    const other = await ctl(agent.socket, 'restart', 'outputs/any', 'app', '--image', `sidecar=${env.images.appV2}`);
    assert.equal(other.code, 2, other.stderr);
    assert.match(other.stderr, /--image names container "sidecar", which is not one of the containers to restart/);
  });

  it('planning a restart asks the runtime only about the pod\'s containers', async () => {
    const target = await fixture.create({ name: `plan-${run}`, namespace: 'outputs', containers: ['a', 'b'].map((name) => ({ name, image: env.images.appV1 })) });
    pods.push(target);
    const other = await fixture.create({ name: `other-${run}`, namespace: 'outputs', containers: ['x', 'y', 'z'].map((name) => ({ name, image: env.images.appV1 })) });
    pods.push(other);
    const client = new CriClient(env.criEndpoint);
    const counted = new CriRuntime(env.criEndpoint, { client });
    const filters: (ContainerFilter | undefined)[] = [];
    const statusOf: string[] = [];
    const list = counted.listContainers.bind(counted);
    counted.listContainers = (f?: ContainerFilter) => {
      filters.push(f);
      return list(f);
    };
    const status = client.containerStatus.bind(client);
    client.containerStatus = (id: string, verbose: boolean) => {
      statusOf.push(id);
      return status(id, verbose);
    };
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-plan-'));
    const engine = new Engine({
      runtime: counted,
      puller: { ensure: () => Promise.reject(new Error('a dry run pulls nothing')) },
      journal: new Journal(stateDir),
      clock: systemClock,
      log: memoryLogger().logger,
    });
    try {
      const plan = await engine.restart({ pod: target.name, containers: ['b'], images: {}, graceSeconds: 1, minReadyMs: 0, timeoutMs: 60_000 }, { dryRun: true });
      assert.equal(plan.containers[0].oldId, target.containerIds.b);
      assert.ok(filters.length > 0 && filters.every((f) => f?.podId === target.podId), `every container list is filtered to the pod: ${JSON.stringify(filters)}`);
      const foreign = statusOf.filter((id) => Object.values(other.containerIds).includes(id));
      assert.deepEqual(foreign, [], 'no status call for another pod\'s containers');
      assert.ok(statusOf.length <= 2, `at most one status call per container of the pod (${statusOf.length})`);
    } finally {
      counted.close();
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });

  describe('cancel while an image is pulled', () => {
    let registry: RegistryServer;
    let proxy: RegistryProxy;

    before(async () => {
      registry = await startRegistry();
      proxy = await startRegistryProxy(registry.host);
    });

    after(async () => {
      await proxy?.close();
      await registry?.stop();
    });

    const slowImage = async (name: string): Promise<string> => {
      const img = buildImage([buildLayer([{ path: 'big.bin', data: seededBytes(`${run}-${name}`, 16 * MiB) }], 0)], `${run}-${name}`);
      await pushImage({ registry: registry.host }, `outputs/${name}`, run, img);
      return `${proxy.host}/outputs/${name}:${run}`;
    };

    /** Starts a restart onto ref and waits until its pull has received bytes. */
    const restartPulling = async (c: AgentClient, pod: TestPod, ref: string): Promise<string> => {
      const base = proxy.bytesForwarded();
      const op = await c.restart({ pod: pod.name, containers: ['app'], images: { app: ref } });
      const stop = new AbortController();
      for await (const o of c.watchOperation(op.id, stop.signal)) {
        if ((o.pulls[0]?.bytesDone ?? 0) > 0 || proxy.bytesForwarded() > base) break;
        assert.ok(['Pending', 'Pulling'].includes(o.state), `still pulling (${o.state}: ${o.error ?? ''})`);
      }
      stop.abort();
      return op.id;
    };

    it('stops the pull at once when no other caller waits on it; the old container runs on', async () => {
      const pod = await onePod('cancel');
      const ref = await slowImage('cancel-alone');
      proxy.setRate(256 * 1024); // 16 MiB would take about a minute
      const c = new AgentClient(`unix://${agent.socket}`);
      try {
        const id = await restartPulling(c, pod, ref);
        await c.cancelOperation(id);
        const end = await watchUntilEnd(c, id, 15_000);
        assert.equal(end.state, 'Cancelled', `cancelled well before the pull could end (${end.state})`);
        assert.equal(end.reason, 'Cancelled');
        assert.match(end.error ?? '', /cancelled while pulling .*nothing was stopped/);
        const sent = proxy.bytesForwarded();
        assert.ok(sent < 16 * MiB, 'the image was not downloaded in full');
        // The runtime's sign that the pull is gone: it closed its blob download (the proxy sees the connection end).
        for (const until = Date.now() + 10_000; proxy.blobsInFlight() > 0; await new Promise((r) => setTimeout(r, 50))) {
          assert.ok(Date.now() < until, `the blob download is still open 10 s after the cancel (${proxy.blobsInFlight()} open)`);
        }
        const gets = proxy.totalBlobGets();
        assert.ok(proxy.bytesForwarded() - sent < 200 * 1024, 'the download stopped');
        assert.equal(await rt.inspectImage(ref), undefined, 'the image is not in the store');
        assert.equal(await rt.containerState(pod.containerIds.app), 'running', 'the old container was not touched');
        assert.equal(proxy.totalBlobGets(), gets, 'no download was started again');
      } finally {
        proxy.setRate(0);
        c.close();
      }
    });

    it('leaves the pull running when another caller still waits on it', async () => {
      const pod = await onePod('cancel-shared');
      const ref = await slowImage('cancel-shared');
      proxy.setRate(256 * 1024);
      const c = new AgentClient(`unix://${agent.socket}`);
      try {
        const other = (async () => {
          let last = '';
          for await (const e of c.pullImages({ images: [ref] })) last = e.phase;
          return last;
        })();
        const id = await restartPulling(c, pod, ref);
        await c.cancelOperation(id);
        const end = await watchUntilEnd(c, id, 15_000);
        assert.equal(end.state, 'Cancelled');
        proxy.setRate(0);
        assert.equal(await other, 'Done', 'the other caller\'s pull finished');
        assert.ok(await rt.inspectImage(ref), 'the image is in the store');
        assert.equal(await rt.containerState(pod.containerIds.app), 'running', 'the old container was not touched');
      } finally {
        proxy.setRate(0);
        await removeCriImage(env.criEndpoint, ref);
        c.close();
      }
    });
  });
});
