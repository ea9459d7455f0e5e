// Kubernetes mode against the real cluster's containerd: a container that someone else made in a kubelet pod's
// sandbox, under the name of one of the pod's containers and without the kubelet's labels, makes a restart of
// NAMESPACE/POD's container of that name ambiguous. The agent (its fast path: the kubelet's sandboxes asked for
// by name) refuses it with ContainerNameAmbiguous, naming both containers, before touching anything: both keep
// running, with the same ids. (Listed by the kubelet's labels, the fast path used to see only the kubelet's one
// and restart it.)
import assert from 'node:assert/strict';
import type { KubeConfig, KubernetesObject, CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { AgentClient } from '../../src/api/client.js';
import { AgentError } from '../../src/errors.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import type { Container } from '../../src/runtime/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { startAgent, type AgentProcess } from '../support/agent-process.js';
import { agentKubeconfig, deleteObjects, ensureObjects, shippedObjects } from '../support/kube-shipped-rbac.js';
import { kubeTest, until } from '../support/kube-test.js';

const env = kubeEnv();
const ns = `ksame-${process.pid}`;
const LOOP = 'trap "exit 0" TERM; while :; do sleep 1 & wait $!; done';

describe('Kubernetes mode: a same-name container without the kubelet labels in a kubelet sandbox (real cluster)', function () {
  this.timeout(180_000);
  let kc: KubeConfig;
  let core: CoreV1Api;
  let agent: AgentProcess | undefined;
  let installed: KubernetesObject[] = [];
  let extra = '';
  const rt = new CriRuntime(env.sandbox.criEndpoint);

  before(async function () {
    ({ kc, core } = await kubeTest(this));
    await core.createNamespace({ body: { metadata: { name: ns } } });
    // deploy/'s objects are the DaemonSet's on the shared cluster: kept as they are, made only where missing.
    installed = await ensureObjects(kc, shippedObjects(['namespace.yaml', 'serviceaccount.yaml', 'rbac.yaml']));
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.sandbox.criEndpoint, '--kubeconfig', await agentKubeconfig(kc), '--node-name', env.nodeName, '--watch-namespace', ns]);
    const pod: V1Pod = {
      metadata: { name: 'web', namespace: ns },
      spec: { nodeName: env.nodeName, terminationGracePeriodSeconds: 2, containers: [{ name: 'app', image: env.sandbox.images.appV1, args: ['sh', '-c', LOOP] }] },
    };
    await core.createNamespacedPod({ namespace: ns, body: pod });
  });

  after(async () => {
    await agent?.stop();
    if (extra) await rt.stopContainer(extra, 0).then(() => rt.removeContainer(extra)).catch(() => undefined);
    if (core) await core.deleteNamespace({ name: ns, gracePeriodSeconds: 0 }).catch(() => undefined);
    if (kc) await deleteObjects(kc, installed.filter((o) => o.kind !== 'Namespace'));
    rt.close();
  });

  it('refuses NAMESPACE/POD app as ambiguous, naming both, and leaves both running', async () => {
    const p = await until('pod web running', 60_000, async () => {
      const cur = await core.readNamespacedPod({ name: 'web', namespace: ns });
      return cur.status?.containerStatuses?.[0]?.state?.running ? cur : undefined;
    });
    const sandbox = (await rt.listPods()).find((s) => s.uid === p.metadata?.uid && s.state === 'ready');
    assert.ok(sandbox, 'the kubelet made a ready sandbox');
    const kubelets = (await rt.listContainers({ podId: sandbox.id })).find((c) => c.name === 'app' && c.state === 'running');
    assert.ok(kubelets, "the kubelet's app container runs");

    // The same container again, in the same sandbox, as a user of the runtime might make it: no kubelet labels or
    // annotations, another attempt (CRI wants (name, attempt) unique in a sandbox).
    const spec = (await rt.inspectContainer(kubelets.id)).spec;
    extra = await rt.createContainer(sandbox.id, { ...spec, labels: {}, annotations: {}, attempt: 90 });
    await rt.startContainer(extra);
    const running = async (): Promise<Container[]> => (await rt.listContainers({ podId: sandbox.id })).filter((c) => c.name === 'app' && c.state === 'running');
    assert.deepEqual(new Set((await running()).map((c) => c.id)), new Set([kubelets.id, extra]), 'two running containers named app');

    const client = new AgentClient(`unix://${agent!.socket}`);
    try {
      await assert.rejects(client.restart({ pod: `${ns}/web`, containers: ['app'] }), (err: unknown) => {
        assert.ok(AgentError.is(err, 'FailedPrecondition'), String(err));
        assert.equal(err.reason, 'ContainerNameAmbiguous', err.message);
        assert.ok(err.message.includes(kubelets.id.slice(0, 12)) && err.message.includes(extra.slice(0, 12)), `both containers named: ${err.message}`);
        assert.match(err.message, /the kubelet's/);
        assert.match(err.message, /not made by the kubelet/);
        return true;
      });
      assert.deepEqual(await client.listOperations(`${ns}/web`), [], 'no operation was recorded');
    } finally {
      client.close();
    }
    assert.deepEqual(new Set((await running()).map((c) => c.id)), new Set([kubelets.id, extra]), 'both still running, same ids: nothing was touched');
  });
});
