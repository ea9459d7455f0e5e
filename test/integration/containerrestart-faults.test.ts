// ContainerRestart objects when the API server misbehaves: a status write answered 409 by the real API server
// (another writer changed the object first), and kube-apiserver restarted in the middle of an operation. The
// agent runs on the sandbox's real containerd against standalone (non-kubelet) pods made through the CRI; the
// restart test starts its own etcd + kube-apiserver, so the shared cluster's API server is never restarted.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { AgentClient } from '../../src/api/client.js';
import { isTerminal } from '../../src/engine/operation.js';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { startConflictProxy, type ConflictProxy } from '../support/conflict-proxy.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { applyCrd, createNamespace, deleteNamespace, testCluster, type TestCluster } from '../support/kube-cluster.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();

function suite(title: string, privateCluster: boolean, body: (ctx: { cluster: () => TestCluster; ns: () => string; rt: () => CriRuntime; pod: (name: string) => Promise<TestPod> }) => void): void {
  describe(title, function () {
    this.timeout(180_000);
    let cluster: TestCluster;
    let ns: string;
    let rt: CriRuntime;
    let fixture: CriPodFixture;
    const pods: TestPod[] = [];
    before(async function () {
      rt = new CriRuntime(env.criEndpoint);
      await requireRuntime(this, `containerd (CRI) at ${env.criEndpoint}`, () => rt.version());
      cluster = await testCluster(this, { private: privateCluster });
      await applyCrd(cluster.kc);
      ns = await createNamespace(cluster.kc, 'kcrd-fault');
      fixture = new CriPodFixture(env.criEndpoint);
    });
    after(async () => {
      for (const p of pods) await fixture?.remove(p).catch(() => undefined);
      fixture?.close();
      rt?.close();
      if (ns && !privateCluster) await deleteNamespace(cluster.kc, ns);
      await cluster?.close();
    });
    body({
      cluster: () => cluster,
      ns: () => ns,
      rt: () => rt,
      pod: async (name) => {
        const p = await fixture.create({ name, namespace: ns, containers: [{ name: 'app', image: env.images.appV1 }, { name: 'side', image: env.images.appV1 }] });
        pods.push(p);
        return p;
      },
    });
  });
}

async function appContainers(rt: CriRuntime, podId: string) {
  return (await rt.listContainers({ podId })).filter((c) => c.name === 'app');
}

suite('ContainerRestart status writes answered 409 by the real API server', false, ({ cluster, ns, rt, pod }) => {
  let proxy: ConflictProxy | undefined;
  let agent: AgentProcess | undefined;
  let dir: string | undefined;
  after(async () => {
    await agent?.stop();
    await proxy?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('re-reads and retries: the claim and a progress write both conflict; the request runs once and succeeds', async () => {
    const p = await pod('conflict');
    const [before] = await appContainers(rt(), p.podId);
    const custom = cluster().kc.makeApiClient(CustomObjectsApi);
    let bumps = 0;
    // Another writer labels the object just before the agent's 1st (claim) and 3rd status writes reach it.
    proxy = await startConflictProxy(
      cluster().kc,
      (_m, path, n) => path.includes('/containerrestarts/racy/status') && (n === 1 || n === 3),
      async () => {
        const cur = (await custom.getNamespacedCustomObject({ group: 'inplace-agent.io', version: 'v1alpha1', plural: 'containerrestarts', namespace: ns(), name: 'racy' })) as { metadata: Record<string, unknown> };
        bumps++;
        await custom.replaceNamespacedCustomObject({
          group: 'inplace-agent.io', version: 'v1alpha1', plural: 'containerrestarts', namespace: ns(), name: 'racy',
          body: { ...cur, metadata: { ...cur.metadata, labels: { [`other-writer-${bumps}`]: 'yes' } } },
        });
      },
    );
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcrd-proxy-'));
    const kubeconfig = path.join(dir, 'kubeconfig');
    fs.writeFileSync(kubeconfig, proxy.kubeconfigJson);
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--kubeconfig', kubeconfig, '--node-name', 'kcrd-node', '--watch-namespace', ns(), '--container-restart-standalone-pods']);
    const api = new ContainerRestartApi(cluster().kc);
    await api.create(containerRestart(ns(), 'racy', { podName: 'conflict', containers: [{ name: 'app' }], strategy: { minReadySeconds: 1 } }));
    const done = await waitForStatus(api, ns(), 'racy', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed');
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    const conflicts = proxy.calls.filter((c) => c.path.includes('/containerrestarts/racy/status') && c.status === 409);
    assert.equal(conflicts.length, 2, `409s from the API server: ${JSON.stringify(proxy.calls.filter((c) => c.path.includes('racy')))}`);
    assert.equal(bumps, 2);
    assert.deepEqual(done.metadata.labels, { 'other-writer-2': 'yes' }, 'the other writer\'s change is kept');
    assert.match(agent.log(), /status write conflicted \(409\); read again and retried/);
    const after = await appContainers(rt(), p.podId);
    assert.equal(after.length, 1);
    assert.notEqual(after[0].id, before.id);
    assert.equal(after[0].id, done.status?.containers?.[0].newContainerID, 'one replacement: the request ran once');
  });
});

suite('kube-apiserver restarted in the middle of an operation (a private etcd + kube-apiserver; standalone pods, not kubelet-managed)', true, ({ cluster, ns, rt, pod }) => {
  let agent: AgentProcess | undefined;
  after(async () => {
    await agent?.stop();
  });

  it('the agent and inplacectl --kubeconfig ride it out: the running request finishes, one created right after the restart is taken, none is lost', async () => {
    const c = cluster();
    const priv = c.private;
    assert.ok(priv, 'this test restarts its own API server');
    const pa = await pod('during');
    const pb = await pod('after');
    const [beforeA] = await appContainers(rt(), pa.podId);
    const [beforeB] = await appContainers(rt(), pb.podId);
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--kubeconfig', c.kubeconfig, '--node-name', 'kcrd-node', '--watch-namespace', ns(), '--container-restart-standalone-pods']);
    const api = new ContainerRestartApi(c.kc);

    // The operator's inplacectl follows request A; the API server goes away while A is in its min-ready window.
    const following = ctl('/nonexistent.sock', '--kubeconfig', c.kubeconfig, 'restart', `${ns()}/during`, 'app', '--image', `app=${env.images.appV2}`, '--min-ready', '6s');
    const list = async () => (await api.list(ns())).items.find((x) => x.spec.podName === 'during');
    const deadline = Date.now() + 60_000;
    let opId = '';
    for (;;) {
      const cr = await list();
      if (cr?.status?.containers?.[0]?.state === 'Verifying') {
        opId = cr.status.operationId ?? '';
        break;
      }
      assert.ok(Date.now() < deadline, `request A never reached Verifying: ${JSON.stringify(cr?.status)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await priv.stopApiServer();
    // A finishes while the API server is down (the agent says so on its socket): its final status can only be
    // written after the restart.
    const ac = new AgentClient(`unix://${agent.socket}`);
    try {
      for (const until = Date.now() + 60_000; !isTerminal((await ac.getOperation(opId)).state); await new Promise((r) => setTimeout(r, 100))) {
        assert.ok(Date.now() < until, `operation ${opId} did not end while the API server was down`);
      }
      assert.equal((await ac.getOperation(opId)).state, 'Succeeded');
    } finally {
      ac.close();
    }
    await priv.startApiServer();
    await api.create(containerRestart(ns(), 'right-after', { podName: 'after', containers: [{ name: 'app', image: env.images.appV2 }], strategy: { minReadySeconds: 1 } }));

    const res = await following;
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout, /restarted in place in [0-9.]+s \(submit to verified[^)]*\): app /);
    const a = await list();
    assert.equal(a?.status?.phase, 'Succeeded');
    const b = await waitForStatus(api, ns(), 'right-after', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed');
    assert.equal(b.status?.phase, 'Succeeded', JSON.stringify(b.status));
    const afterA = await appContainers(rt(), pa.podId);
    const afterB = await appContainers(rt(), pb.podId);
    assert.deepEqual(afterA.map((x) => x.id), [a?.status?.containers?.[0].newContainerID], 'A replaced exactly once');
    assert.deepEqual(afterB.map((x) => x.id), [b.status?.containers?.[0].newContainerID], 'B replaced exactly once');
    assert.notEqual(afterA[0].id, beforeA.id);
    assert.notEqual(afterB[0].id, beforeB.id);
    assert.equal(afterA[0].image, env.images.appV2);
    assert.match(agent.log(), /ContainerRestart watch failed; restarting it/);
  });
});
