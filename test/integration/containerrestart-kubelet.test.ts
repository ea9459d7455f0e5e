// ContainerRestart objects for a kubelet-managed pod on the project's real one-node cluster: the agent on the
// cluster's containerd takes them and restarts through the kubelet (Kubernetes mode's strategy), and
// `inplacectl --kubeconfig` drives an image change without touching the node.
import assert from 'node:assert/strict';
import { CoreV1Api, KubeConfig, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { applyCrd, createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { agentKubeconfig, deleteObjects, ensureObjects, shippedObjects } from '../support/kube-shipped-rbac.js';
import { createWebPod, requireTestCluster } from '../support/kube-web-pod.js';

const env = kubeEnv();

describe('ContainerRestart of a kubelet-managed pod (real one-node cluster)', function () {
  this.timeout(180_000);
  const kc = new KubeConfig();
  let core: CoreV1Api;
  let api: ContainerRestartApi;
  let ns: string | undefined;
  let agent: AgentProcess | undefined;
  let installed: KubernetesObject[] = [];

  const read = () => core.readNamespacedPod({ name: 'web', namespace: ns as string });
  const status = (p: V1Pod, c: string) => p.status?.containerStatuses?.find((s) => s.name === c);
  const until = async (what: string, probe: (p: V1Pod) => boolean): Promise<V1Pod> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const p = await read();
      if (probe(p)) return p;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(p.status?.containerStatuses)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const bothRunning = (p: V1Pod) => ['app', 'sidecar'].every((c) => status(p, c)?.state?.running && status(p, c)?.ready);

  before(async function () {
    core = await requireTestCluster(this, kc);
    await applyCrd(kc);
    api = new ContainerRestartApi(kc);
    ns = await createNamespace(kc, 'kcrd-kubelet');
    await createWebPod(core, ns, ['app', 'sidecar']);
    // As deploy/'s ServiceAccount, never admin (its objects are the DaemonSet's on the shared cluster: kept as they are).
    installed = await ensureObjects(kc, shippedObjects(['namespace.yaml', 'serviceaccount.yaml', 'rbac.yaml']));
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.sandbox.criEndpoint, '--kubeconfig', await agentKubeconfig(kc), '--node-name', env.nodeName, '--watch-namespace', ns, '--min-ready', '500ms']);
  });

  after(async () => {
    await agent?.stop();
    if (ns) await deleteNamespace(kc, ns);
    await deleteObjects(kc, installed.filter((o) => o.kind !== 'Namespace'));
  });

  it('same image: the kubelet starts the next instance; pod, siblings and their restart counts stay', async () => {
    const before = await until('both containers running', bothRunning);
    await api.create(containerRestart(ns as string, 'bounce', { podName: 'web', containers: [{ name: 'app' }], strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } }));
    const done = await waitForStatus(api, ns as string, 'bounce', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 90_000);
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    const after = await read();
    assert.equal(after.metadata?.uid, before.metadata?.uid, 'same pod');
    assert.equal(after.status?.podIP, before.status?.podIP);
    assert.equal(status(after, 'app')?.restartCount, (status(before, 'app')?.restartCount ?? 0) + 1);
    assert.equal(status(after, 'sidecar')?.restartCount, status(before, 'sidecar')?.restartCount);
    assert.equal(status(after, 'sidecar')?.containerID, status(before, 'sidecar')?.containerID);
    const newId = (status(after, 'app')?.containerID ?? '').replace(/^containerd:\/\//, '');
    assert.equal(done.status?.containers?.[0].newContainerID, newId, 'the status names the container the kubelet started');
    assert.equal(done.status?.containers?.[0].oldContainerID, (status(before, 'app')?.containerID ?? '').replace(/^containerd:\/\//, ''));
  });

  it('inplacectl --kubeconfig: a new image patched into the pod spec, exit 0, nothing else changed', async () => {
    const before = await until('both containers running', bothRunning);
    const r = await ctl('/nonexistent.sock', '--kubeconfig', env.kubeconfig, 'restart', `${ns}/web`, 'app', '--image', `app=${env.sandbox.images.appV2}`, '--min-ready', '1s', '--grace', '5s');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /restarted in place in [0-9.]+s \(submit to verified[^)]*\): app /);
    const after = await read();
    assert.equal(after.spec?.containers.find((c) => c.name === 'app')?.image, env.sandbox.images.appV2);
    assert.equal(after.spec?.containers.find((c) => c.name === 'sidecar')?.image, env.sandbox.images.appV1);
    assert.equal(status(after, 'sidecar')?.containerID, status(before, 'sidecar')?.containerID);
    assert.equal(after.metadata?.uid, before.metadata?.uid);
  });
});
