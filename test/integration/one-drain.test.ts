// One drain a pod (issue 40): a ContainerRestart of both containers of a gated two-container pod behind a Service,
// through the DaemonSet's agent of the cluster's first node. The pod is drained once: its readiness-gate condition
// goes False once and True once (every version of the pod is watched), the agent observes one drain (its
// inplace_drain_duration_seconds count for the slices part), both containers are new with their restart counts
// up by one, the pod is the same (UID), and clients through the Service see no failed request.
import assert from 'node:assert/strict';
import { CoreV1Api, KubeConfig, Watch, type V1Pod } from '@kubernetes/client-node';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { daemonSetAgent } from '../support/daemonset-agent.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';
import { requireRuntime } from '../support/require-runtime.js';
import { agentImage, createService, serverPod, waitReadyEndpoints, type ServiceAddress } from '../support/traffic-fixture.js';
import { describeTallies, failedOf, keepAliveClient, newConnectionClient, waitServing, withTraffic } from '../support/traffic.js';
import { waitForRules } from '../support/traffic-trace.js';

const env = kubeEnv();

/** The sum of a metric's samples whose labels include `labels`, in a Prometheus exposition. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

describe('one drain a pod: both containers of a pod restarted within one drain (real cluster)', function () {
  this.timeout(240_000);
  const kc = new KubeConfig();
  let core: CoreV1Api;
  let crs: ContainerRestartApi;
  let ns = '';
  let svc: ServiceAddress;
  let metricsUrl = '';

  const read = () => core.readNamespacedPod({ name: 'web-0', namespace: ns });
  const status = (p: V1Pod, name: string) => p.status?.containerStatuses?.find((s) => s.name === name);
  const gate = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === READY_CONDITION);
  const drains = async () => sample(await (await fetch(metricsUrl)).text(), 'inplace_drain_duration_seconds_count', { part: 'slices' });

  before(async function () {
    let image = '';
    await requireRuntime(this, `the agent's DaemonSet inplace-system/inplace-agent on the test cluster (scripts/kube-deploy-agent)`, async () => {
      kc.loadFromFile(env.kubeconfig);
      core = kc.makeApiClient(CoreV1Api);
      image = await agentImage(kc);
      metricsUrl = `http://${(await daemonSetAgent(kc)).metricsAddr}/metrics`;
    });
    crs = new ContainerRestartApi(kc);
    ns = await createNamespace(kc, 'onedrain');
    // web-0: the server and a sidecar; web-1: a second endpoint, so that web-0 is drained (not the only one).
    const web0 = serverPod(ns, 'web-0', 'web', image);
    web0.spec!.containers.push({ name: 'sidecar', image: env.sandbox.images.appV1, args: ['sh', '-c', TRAP_TERM_APP] });
    await core.createNamespacedPod({ namespace: ns, body: web0 });
    await core.createNamespacedPod({ namespace: ns, body: serverPod(ns, 'web-1', 'web', image) });
    svc = await createService(kc, ns, 'web', 'web');
    await waitReadyEndpoints(kc, ns, 'web', 2);
    await waitForRules({ namespace: ns, name: 'web', ...svc }, 2);
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
  });

  for (const [how, ordered] of [
    ['one after another (ordered)', true],
    ['together (ordered false, as a rollout asks)', false],
  ] as const) {
    it(`${how}: the gate goes False once and True once; one drain observed; both containers new, same pod, no failed request`, async () => {
      const before = await read();
      assert.equal(gate(before)?.status, 'True', JSON.stringify(before.status?.conditions));
      const gates: string[] = [];
      const watch = await new Watch(kc).watch(
        `/api/v1/namespaces/${ns}/pods`,
        { fieldSelector: 'metadata.name=web-0', resourceVersion: before.metadata?.resourceVersion },
        (_t, p: V1Pod) => void gates.push(`${gate(p)?.status}/${gate(p)?.reason}`),
        () => undefined,
      );
      const drains0 = await drains();
      const clients = {
        newConnection: () => newConnectionClient({ host: svc.clusterIp, port: svc.port }),
        keepAlive: () => keepAliveClient({ host: svc.clusterIp, port: svc.port }, 2),
      };
      await waitServing(clients);
      try {
        const { result: done, tallies } = await withTraffic(clients, 1000, async () => {
          const crName = ordered ? 'both-ordered' : 'both-together';
          await crs.create(containerRestart(ns, crName, { podName: 'web-0', containers: [{ name: 'app' }, { name: 'sidecar' }], strategy: { gracePeriodSeconds: 5, minReadySeconds: 0, ordered } }));
          const cr = await waitForStatus(crs, ns, crName, (c) => c.status?.phase === 'Succeeded' || c.status?.phase === 'Failed', 120_000);
          // The way back: the address a ready endpoint again, as the agent waited for before it ended.
          await waitReadyEndpoints(kc, ns, 'web', 2);
          return cr;
        });
        assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
        // Versions of the pod, the gate's status collapsed: one False (the drain), then True (after the last container).
        const runs = gates.map((g) => g.split('/')[0]).filter((g, i, all) => i === 0 || g !== all[i - 1]);
        while (runs[0] === 'True') runs.shift();
        assert.deepEqual(runs, ['False', 'True'], `the gate went False once and True once: ${gates.join(' ')}`);
        assert.equal((await drains()) - drains0, 1, 'the agent observed one drain for the two containers');
        const after = await read();
        assert.equal(after.metadata?.uid, before.metadata?.uid, 'the same pod');
        for (const name of ['app', 'sidecar']) {
          assert.equal(status(after, name)?.restartCount, (status(before, name)?.restartCount ?? 0) + 1, `${name} restarted once`);
          assert.notEqual(status(after, name)?.containerID, status(before, name)?.containerID, `${name} is a new instance`);
        }
        const steps = done.status?.containers ?? [];
        assert.deepEqual(steps.map((c) => `${c.name}:${c.state}`), ['app:Done', 'sidecar:Done'], JSON.stringify(steps));
        assert.match(steps[1].traffic ?? '', /one drain/, `the sidecar went within the app's drain: ${steps[1].traffic}`);
        const text = describeTallies(tallies);
        for (const t of Object.values(tallies)) assert.ok(t.ok > 50, `the clients got answers: ${text}`);
        assert.equal(failedOf(tallies), 0, `no failed request: ${text}`);
      } finally {
        watch.abort();
      }
    });
  }
});
