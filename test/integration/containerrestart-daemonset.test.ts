// ContainerRestart objects handled by the agent as users install it: the DaemonSet in inplace-system
// (scripts/kube-deploy-agent, which CI runs before the tests), on the project's real cluster (its first node). The test
// starts no agent of its own; it checks that the request was taken by the DaemonSet's agent (the identity kept
// in that pod's state directory), and reads every outcome back from the API server, the runtime and the pod's
// emptyDir.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig, Watch, type CoreV1Event, type V1Pod } from '@kubernetes/client-node';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { imageMatches } from '../../src/image-ref.js';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { AGENT_DS, daemonSetAgent } from '../support/daemonset-agent.js';
import { retag } from '../support/registry-retag.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { until } from '../support/kube-users.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = kubeEnv();
const SIBLINGS = ['sidecar', 'logger'];

/** Exits 0 on SIGTERM (so the kubelet starts the next instance of a same-image restart). */
const APP = `trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`;

describe("ContainerRestart handled by the DaemonSet's agent (real cluster, first node)", function () {
  this.timeout(180_000);
  const kc = new KubeConfig();
  const rt = new CriRuntime(env.sandbox.criEndpoint);
  let core: CoreV1Api;
  let api: ContainerRestartApi;
  let ns: string | undefined;
  /** The identity of the DaemonSet's agent on this node (agent-id in its hostPath state directory). */
  let agentId = '';
  const marker = `kept-${randomBytes(4).toString('hex')}`;

  const read = () => core.readNamespacedPod({ name: 'web', namespace: ns as string });
  const status = (p: V1Pod, c: string) => p.status?.containerStatuses?.find((s) => s.name === c);
  const id = (p: V1Pod, c: string) => (status(p, c)?.containerID ?? '').replace(/^containerd:\/\//, '');
  const isReady = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const ready = () => until('pod web Ready', 60_000, async () => ((p) => (isReady(p) ? p : undefined))(await read()));
  const sandboxOf = async (p: V1Pod) => (await rt.listPods()).find((s) => s.uid === p.metadata?.uid && s.state === 'ready')?.id;
  const cat = async (p: V1Pod, container: string, file: string) => (await rt.exec(id(p, container), ['cat', file], 10)).stdout.trim();

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet ${AGENT_DS.namespace}/${AGENT_DS.name} Ready on node ${env.nodeName} (scripts/kube-deploy-agent)`, async () => {
      kc.loadFromFile(env.kubeconfig);
      core = kc.makeApiClient(CoreV1Api);
      agentId = (await daemonSetAgent(kc)).id;
    });
    api = new ContainerRestartApi(kc);
    ns = await createNamespace(kc, 'kds');
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'web', labels: { app: 'web' } },
        spec: {
          nodeName: env.nodeName,
          terminationGracePeriodSeconds: 5,
          // Gated on the agent's condition: the DaemonSet's agent sets it True for the pod to become Ready at
          // all, and a restart really drains it.
          readinessGates: [{ conditionType: READY_CONDITION }],
          volumes: [{ name: 'data', emptyDir: {} }],
          containers: ['app', ...SIBLINGS].map((name) => ({ name, image: env.sandbox.images.appV1, args: ['sh', '-c', APP], volumeMounts: [{ name: 'data', mountPath: '/data' }] })),
        },
      },
    });
    const p = await ready();
    assert.equal(p.status?.conditions?.find((c) => c.type === READY_CONDITION)?.reason, 'Ready', "the DaemonSet's agent set the readiness gate condition");
    const w = await rt.exec(id(p, 'sidecar'), ['sh', '-c', `echo ${marker} > /data/marker`], 10);
    assert.equal(w.exitCode, 0, w.stderr);
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
    rt.close();
  });

  it('same image: condition False(Draining) then True(Restarted); pod, IP, sandbox, siblings and the emptyDir kept; restartCount +1', async () => {
    const before = await ready();
    const sandbox = await sandboxOf(before);
    assert.ok(sandbox, 'the pod sandbox is found in the runtime');
    const seen: string[] = [];
    const watch = await new Watch(kc).watch(
      `/api/v1/namespaces/${ns}/pods`,
      { fieldSelector: 'metadata.name=web' },
      (_type, obj: V1Pod) => {
        const c = obj.status?.conditions?.find((x) => x.type === READY_CONDITION);
        const s = c ? `${c.status}/${c.reason}` : 'none';
        if (seen.at(-1) !== s) seen.push(s);
      },
      () => undefined,
    );
    try {
      await api.create(containerRestart(ns as string, 'bounce', { podName: 'web', containers: [{ name: 'app' }], strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } }));
      const done = await waitForStatus(api, ns as string, 'bounce', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 90_000);
      assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
      assert.equal(done.status?.agentId, agentId, "taken by the DaemonSet's agent");
      assert.equal(done.status?.nodeName, env.nodeName);
      await until('the watch to see True/Restarted', 30_000, async () => (seen.includes('True/Restarted') ? true : undefined), () => seen.join(' -> '));
      const draining = seen.indexOf('False/Draining');
      assert.ok(draining >= 0 && seen.indexOf('True/Restarted') > draining, `condition went ${seen.join(' -> ')}`);
    } finally {
      watch.abort();
    }
    const after = await ready();
    assert.equal(after.metadata?.uid, before.metadata?.uid, 'same pod');
    assert.equal(after.status?.podIP, before.status?.podIP, 'same IP');
    assert.equal(await sandboxOf(after), sandbox, 'same sandbox');
    for (const c of SIBLINGS) {
      assert.equal(id(after, c), id(before, c), `${c}: same container`);
      assert.equal(status(after, c)?.restartCount, status(before, c)?.restartCount, `${c}: same restartCount`);
    }
    assert.notEqual(id(after, 'app'), id(before, 'app'));
    assert.equal(status(after, 'app')?.restartCount, (status(before, 'app')?.restartCount ?? 0) + 1);
    assert.equal(await cat(after, 'app', '/data/marker'), marker, "the emptyDir's file, read by the new instance");
  });

  it('new image: Pulling, then Pulled, before the kubelet kills the old instance; only the target recreated; the spec shows the new image', async () => {
    const before = await ready();
    // A tag the node has never seen: the agent pulls it, so its Pulling and Pulled are on record (for an image
    // already present the agent records neither: the kubelet's own Pulled says "already present on machine").
    const image = await retag(env.sandbox.registry, env.sandbox.images.appV2, `v2-${randomBytes(4).toString('hex')}`);
    await api.create(containerRestart(ns as string, 'upgrade', { podName: 'web', containers: [{ name: 'app', image }], strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } }));
    const done = await waitForStatus(api, ns as string, 'upgrade', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 90_000);
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    assert.equal(done.status?.agentId, agentId, "taken by the DaemonSet's agent");
    const after = await read();
    assert.equal(after.spec?.containers.find((c) => c.name === 'app')?.image, image);
    // The status names the image by one of its tags: the new one, or the first tag of the same content.
    const runs = status(after, 'app')?.image ?? '';
    assert.ok(imageMatches(runs, image) || imageMatches(runs, env.sandbox.images.appV2), `app runs ${runs}`);
    assert.notEqual(id(after, 'app'), id(before, 'app'));
    for (const c of SIBLINGS) {
      assert.equal(after.spec?.containers.find((x) => x.name === c)?.image, env.sandbox.images.appV1);
      assert.equal(id(after, c), id(before, c), `${c}: same container`);
      assert.equal(status(after, c)?.restartCount, status(before, c)?.restartCount, `${c}: same restartCount`);
    }
    assert.equal(after.metadata?.uid, before.metadata?.uid, 'same pod');
    assert.equal(await cat(after, 'app', '/data/marker'), marker, 'the emptyDir is kept across the image change');

    // The kubelet records its Killing a moment after the patch: wait for it, then compare the order of writes.
    const events = await until(
      "the kubelet's Killing event",
      30_000,
      async () => {
        const items = (await core.listNamespacedEvent({ namespace: ns as string, fieldSelector: 'involvedObject.name=web' })).items;
        return items.some((e) => killing(e)) ? items : undefined;
      },
    );
    const rv = (e: CoreV1Event) => Number(e.metadata?.resourceVersion);
    const agents = (reason: string) => events.filter((e) => e.reason === reason && e.source?.component === 'inplace-agent' && (e.message ?? '').includes(image));
    const pulling = agents('Pulling');
    const pulled = agents('Pulled');
    const killed = events.filter((e) => killing(e));
    assert.equal(pulling.length, 1, 'the agent recorded Pulling for the new image');
    assert.equal(pulled.length, 1, 'the agent recorded Pulled for the new image');
    assert.equal(killed.length, 1, 'the kubelet killed the old instance once');
    assert.equal(pulling[0].involvedObject.fieldPath, 'spec.containers{app}');
    assert.ok(rv(pulling[0]) < rv(pulled[0]), 'Pulling recorded before Pulled');
    assert.ok(rv(pulled[0]) < rv(killed[0]), 'Pulled recorded before Killing');
  });
});

/** The kubelet's Killing of the app container because its definition (the image) changed. */
function killing(e: CoreV1Event): boolean {
  return e.reason === 'Killing' && e.source?.component === 'kubelet' && e.involvedObject.fieldPath === 'spec.containers{app}' && /definition changed/.test(e.message ?? '');
}
