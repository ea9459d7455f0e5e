// A sandbox no kubelet made (made through the CRI, as `crictl runp` would), named by an RPC restart (inplacectl
// and gRPC) of an agent in Kubernetes mode on the real cluster (issue 28: sandboxes without kubelet labels are
// refused in Kubernetes mode). The agent runs as a host process with deploy/'s ServiceAccount, for a Node object
// of the test's own, on the runtime sandbox's containerd: the cluster node's kubelet stops a sandbox it did not
// make within about 2 s (its housekeeping; seen on 1.36.3), which would race the assertions. Refused before
// anything stops, with reason PodNotInApiServer; with --container-restart-standalone-pods the same restart runs
// (the node admin's opt-in). Standalone mode (no kubeconfig) is unchanged (restart-e2e.test.ts).
import assert from 'node:assert/strict';
import type { KubernetesObject } from '@kubernetes/client-node';
import { AgentClient } from '../../src/api/client.js';
import { AgentError } from '../../src/errors.js';
import { RefusalReasons } from '../../src/engine/reasons.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { deleteNodes, ensureNode } from '../support/kube-apply.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { AGENT_SA, agentKubeconfig, deleteObjects, ensureObjects, shippedObjects } from '../support/kube-shipped-rbac.js';
import { kubeTest, type KubeTest } from '../support/kube-test.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();

describe("Kubernetes mode: an RPC restart of a sandbox no kubelet made is refused (real cluster, real containerd)", function () {
  this.timeout(120_000);
  let kube: KubeTest;
  let ns = '';
  let installed: KubernetesObject[] = [];
  let agentKc = '';
  let agent: AgentProcess | undefined;
  let fixture: CriPodFixture | undefined;
  let loose: TestPod | undefined;
  const rt = new CriRuntime(env.criEndpoint);
  const node = `kforeign-${process.pid}`;
  const agentArgs = (...extra: string[]) => [
    ...['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--kubeconfig', agentKc, '--node-name', node],
    ...['--watch-namespace', ns, '--no-fleet-prewarm', '--min-ready', '500ms', '--grace', '5s', ...extra],
  ];
  /** The sandbox's containers: name, id and state, sorted. */
  const containers = async () => (await rt.listContainers({ podId: loose?.podId })).map((c) => `${c.name} ${c.id} ${c.state}`).sort();

  before(async function () {
    kube = await kubeTest(this);
    await requireRuntime(this, `containerd (CRI) at ${env.criEndpoint}`, () => rt.version());
    ns = await createNamespace(kube.kc, 'kforeign');
    await ensureNode(kube.kc, node, {});
    installed = await ensureObjects(kube.kc, shippedObjects(['namespace.yaml', 'serviceaccount.yaml', 'rbac.yaml']));
    agentKc = await agentKubeconfig(kube.kc, AGENT_SA, node);
    fixture = new CriPodFixture(env.criEndpoint);
    // Named like a pod of the test's namespace, which the API server does not have.
    loose = await fixture.create({ name: 'loose', namespace: ns, containers: [{ name: 'app', image: env.images.appV1 }] });
  });

  after(async () => {
    await agent?.stop();
    if (loose) await fixture?.remove(loose).catch(() => undefined);
    fixture?.close();
    rt.close();
    if (ns) await deleteNamespace(kube.kc, ns);
    if (kube) await deleteNodes(kube.kc, [node]);
    if (kube) await deleteObjects(kube.kc, installed.filter((o) => o.kind !== 'Namespace'));
  });

  it('inplacectl restart, its dry run and a gRPC Restart: refused (PodNotInApiServer), the container untouched, no operation', async () => {
    agent = await startAgent(agentArgs());
    const before = await containers();
    assert.equal(before.length, 1);
    assert.match(before[0], / running$/);
    const why = new RegExp(`pod ${ns}/loose is a sandbox no kubelet made \\(container app has no io\\.kubernetes\\.pod\\.uid label\\), so no API server knows it.*nothing was touched`);
    const r = await ctl(agent.socket, 'restart', `${ns}/loose`, 'app', '--image', `app=${env.images.appV2}`);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr + r.stdout, why);
    const dry = await ctl(agent.socket, 'restart', `${ns}/loose`, 'app', '--dry-run');
    assert.equal(dry.code, 1, dry.stdout + dry.stderr);
    assert.match(dry.stderr + dry.stdout, why);
    const c = new AgentClient(`unix://${agent.socket}`);
    try {
      await assert.rejects(c.restart({ pod: loose?.podId ?? '', containers: ['app'] }), (err: unknown) => {
        assert.ok(err instanceof AgentError, String(err));
        assert.equal(err.reason, RefusalReasons.PodNotInApiServer);
        assert.match(err.message, why);
        return true;
      });
      assert.deepEqual(await c.listOperations(), [], 'no operation recorded');
    } finally {
      c.close();
    }
    assert.deepEqual(await containers(), before, 'the same container, still running');
  });

  it('with --container-restart-standalone-pods the same RPC restart runs (the standalone strategy)', async () => {
    await agent?.stop();
    agent = await startAgent(agentArgs('--container-restart-standalone-pods'));
    const [old] = await containers();
    const r = await ctl(agent.socket, 'restart', `${ns}/loose`, 'app');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const now = (await containers()).filter((l) => l.endsWith(' running'));
    assert.equal(now.length, 1, now.join('\n'));
    assert.notEqual(now[0].split(' ')[1], old.split(' ')[1], 'a new container runs');
  });
});
