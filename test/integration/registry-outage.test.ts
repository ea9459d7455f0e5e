// The registry killed in the middle of a restart's pull, against the sandbox's real containerd and dockerd: the
// pull is retried as the agent's policy says (--pull-retries), then the operation fails with a clear error and
// the target container is not touched.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { AgentClient } from '../../src/api/client.js';
import type { OperationView as Operation } from '../../src/api/convert.js';
import { OPERATION_LABEL } from '../../src/engine/restart-plan.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import { DockerPodFixture } from '../testbed/docker-pods.js';
import type { PodFixture, TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { startAgent, type AgentProcess } from '../support/agent-process.js';
import { buildImage, buildLayer, pushImage, seededBytes } from '../support/registry-images.js';
import { startRegistryProxy, type RegistryProxy } from '../support/registry-proxy.js';
import { startRegistry, type RegistryServer } from '../support/registry-server.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();
const MiB = 1024 * 1024;
const RETRIES = 2;

const flavours = [
  {
    name: 'cri',
    agentArgs: ['--runtime', 'cri', '--cri-endpoint', env.criEndpoint],
    runtime: (): Runtime => new CriRuntime(env.criEndpoint),
    fixture: (): PodFixture => new CriPodFixture(env.criEndpoint),
  },
  {
    name: 'docker',
    agentArgs: ['--runtime', 'docker', '--docker-host', env.dockerHost],
    runtime: (): Runtime => new DockerRuntime(env.dockerHost),
    fixture: (): PodFixture => new DockerPodFixture(env.dockerHost),
  },
];

for (const f of flavours) {
  describe(`registry killed mid-pull during a restart (${f.name})`, function () {
    this.timeout(90_000);
    let rt: Runtime;
    let fixture: PodFixture;
    let registry: RegistryServer;
    let proxy: RegistryProxy | undefined;
    let agent: AgentProcess | undefined;
    let pod: TestPod | undefined;

    before(async function () {
      rt = f.runtime();
      await requireRuntime(this, f.name, () => rt.version());
      fixture = f.fixture();
      registry = await startRegistry();
    });

    after(async () => {
      await agent?.stop();
      if (pod) await fixture?.remove(pod).catch(() => undefined);
      await proxy?.close();
      await registry?.stop();
      fixture?.close();
      rt?.close();
    });

    it(`retries the pull ${RETRIES} times (--pull-retries ${RETRIES}), then fails naming the image; the target is not touched`, async () => {
      const run = randomBytes(4).toString('hex');
      // 16 MiB at 4 MiB/s: the pull is still running when the registry dies.
      const image = buildImage([buildLayer([{ path: 'big.bin', data: seededBytes(`${run}-outage`, 16 * MiB) }])], `${run}-outage`);
      await pushImage({ registry: registry.host }, 'faults/outage', run, image);
      proxy = await startRegistryProxy(registry.host);
      proxy.setRate(4 * MiB);
      const ref = `${proxy.host}/faults/outage:${run}`;
      pod = await fixture.create({
        name: 'registry-outage',
        namespace: 'faults',
        containers: [
          { name: 'app', image: env.images.appV1 },
          { name: 'sidecar', image: env.images.appV1 },
        ],
      });
      agent = await startAgent([...f.agentArgs, '--pull-retries', String(RETRIES), '--pull-stall-timeout', '3s']);
      const c = new AgentClient(`unix://${agent.socket}`, 60_000);
      let end: Operation | undefined;
      try {
        const op = await c.restart({ images: { app: ref }, graceSeconds: 2, graceSet: true, minReadyMs: '500', minReadySet: true, timeoutMs: '0', pod: pod.name, containers: ['app'] });
        const until = Date.now() + 30_000;
        while (proxy.bytesForwarded() < MiB) {
          assert.ok(Date.now() < until, `the pull did not start: ${agent.log()}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        // The registry dies mid-layer; its address then refuses every connection.
        registry.kill();
        await proxy.close();
        proxy = undefined;
        for await (const o of c.watchOperation(op.id)) end = o;
      } finally {
        c.close();
      }
      assert.ok(end);
      assert.equal(end.state, 'Failed', `${end.state}: ${end.error}`);
      assert.match(end.error ?? '', new RegExp(`image "${ref.replace(/[.]/g, '\\.')}" could not be pulled: .+; nothing was stopped`));
      const retried = agent.log().split('\n').filter((l) => l.includes('image pull failed, retrying') && l.includes(ref));
      assert.equal(retried.length, RETRIES, `retried ${RETRIES} times:\n${agent.log()}`);
      assert.match(agent.log(), new RegExp(`image pull failed .*attempts=${RETRIES + 1}`));
      assert.deepEqual(
        end.containers.map((x) => x.step),
        ['Waiting'],
        'the container was never reached',
      );
      const now = await rt.listContainers({ podId: pod.podId });
      const app = now.filter((x) => x.name === 'app');
      assert.deepEqual(
        app.map((x) => [x.id, x.state]),
        [[pod.containerIds.app, 'running']],
        'the target runs untouched under its old id',
      );
      assert.equal((await rt.listContainers()).filter((x) => x.labels[OPERATION_LABEL] === end!.id).length, 0, 'no replacement was created');
    });
  });
}
