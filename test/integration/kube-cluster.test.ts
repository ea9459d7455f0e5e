// The test cluster itself (scripts/kube-sandbox): a real kubelet registers a Ready node, and a pod scheduled
// through the API server runs on the cluster's containerd.
import assert from 'node:assert/strict';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { kubeTest, until } from '../support/kube-test.js';

const env = kubeEnv();

describe('test cluster (scripts/kube-sandbox, real kubelet)', function () {
  this.timeout(120_000);
  let core: CoreV1Api;
  const ns = 'default';
  const name = `cluster-check-${process.pid}`;

  before(async function () {
    ({ core } = await kubeTest(this));
  });

  after(async function () {
    if (core) await core.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds: 0 }).catch(() => undefined);
  });

  it('has its node Ready at the bridge address, registered by kubelet v1.36.3', async () => {
    const node = await core.readNode({ name: env.nodeName });
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'True', `node condition Ready: ${JSON.stringify(ready)}`);
    assert.equal(node.status?.nodeInfo?.kubeletVersion, 'v1.36.3');
    const internal = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    assert.equal(internal, env.nodeIp);
    assert.match(node.status?.nodeInfo?.containerRuntimeVersion ?? '', /^containerd:\/\//);
  });

  it('schedules a pod that the kubelet runs on the cluster containerd', async () => {
    const pod: V1Pod = {
      metadata: { name, namespace: ns },
      spec: {
        terminationGracePeriodSeconds: 1,
        // The scheduler still decides, held to the first node (the cluster may have more; their runtimes differ).
        nodeSelector: { 'kubernetes.io/hostname': env.nodeName },
        containers: [{ name: 'app', image: env.sandbox.images.appV1 }],
      },
    };
    const created = await core.createNamespacedPod({ namespace: ns, body: pod });
    const uid = created.metadata?.uid;
    assert.ok(uid);
    const running = await until('the pod to run', 90_000, async () => {
      const p = await core.readNamespacedPod({ name, namespace: ns });
      const st = p.status?.containerStatuses?.[0];
      return p.status?.phase === 'Running' && st?.ready && st.state?.running ? p : undefined;
    });
    assert.equal(running.spec?.nodeName, env.nodeName, 'bound by the scheduler to the node');
    const podIp = running.status?.podIP ?? '';
    assert.ok(podIp.startsWith(env.nodeIp.split('.').slice(0, 3).join('.')), `pod IP ${podIp} in the bridge subnet`);

    // The container the API server reports is the one containerd runs, labelled by the kubelet.
    const id = running.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '');
    assert.ok(id);
    const rt = new CriRuntime(env.sandbox.criEndpoint);
    try {
      const sandbox = (await rt.listPods()).find((p) => p.uid === uid);
      assert.ok(sandbox, `a CRI pod sandbox of pod uid ${uid}`);
      assert.equal(sandbox.labels['io.kubernetes.pod.name'], name);
      const ctr = (await rt.listContainers()).find((c) => c.id === id);
      assert.equal(ctr?.podId, sandbox.id);
      assert.equal(ctr?.state, 'running');
    } finally {
      rt.close();
    }

    const logs = await until('the app to log', 30_000, async () => {
      const text = await core.readNamespacedPodLog({ name, namespace: ns, container: 'app' });
      return text.includes('app v1: started') ? text : undefined;
    });
    assert.match(logs, /app v1: started/);
  });
});
