// The readiness gate opened at the first sight of the new instance in the runtime (src/kube/kubelet/runtime-sight.ts),
// held at the step where it could go wrong: the new instance runs and its readiness probe does not pass until the
// test lets it. Every version of the pod the API server shows from the drain on is recorded (a watch), and the pod
// must never be Ready until then (but while the old instance still runs), while the gate is already True. On the DaemonSet's agent of the cluster's first
// node (as users install it), for a same-image restart and an image change, with min-ready 0 (where the gate opens
// at the start).
import assert from 'node:assert/strict';
import { CoreV1Api, KubeConfig, Watch, type V1Pod } from '@kubernetes/client-node';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { AGENT_DS, daemonSetAgent } from '../support/daemonset-agent.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { until } from '../support/kube-users.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = kubeEnv();

/**
 * The app: the pod's first instance is ready at once; every later instance (the emptyDir remembers that one ran)
 * only once /tmp/release exists in it, which the test writes. Exits 0 on SIGTERM.
 */
const APP = `[ -f /data/started ] || touch /tmp/release; touch /data/started; trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`;

/** One version of the pod as the watch saw it. */
interface Seen {
  rv: number;
  ready: boolean;
  gate: string;
  /** The app container's id and state in that version's status. */
  appId: string;
  appRunning: boolean;
  appReady: boolean;
}

describe('the readiness gate opened from the runtime: never Ready before the new instance is (real cluster)', function () {
  this.timeout(240_000);
  const kc = new KubeConfig();
  const rt = new CriRuntime(env.sandbox.criEndpoint);
  let core: CoreV1Api;
  let api: ContainerRestartApi;
  let ns = '';

  const read = () => core.readNamespacedPod({ name: 'web', namespace: ns });
  const app = (p: V1Pod) => p.status?.containerStatuses?.find((s) => s.name === 'app');
  const appId = (p: V1Pod) => (app(p)?.containerID ?? '').replace(/^containerd:\/\//, '');
  const cond = (p: V1Pod, type: string) => p.status?.conditions?.find((c) => c.type === type);
  const isReady = (p: V1Pod) => cond(p, 'Ready')?.status === 'True';
  const ready = () => until('pod web Ready', 60_000, async () => ((p) => (isReady(p) ? p : undefined))(await read()));

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet ${AGENT_DS.namespace}/${AGENT_DS.name} Ready on node ${env.nodeName} (scripts/kube-deploy-agent)`, async () => {
      kc.loadFromFile(env.kubeconfig);
      core = kc.makeApiClient(CoreV1Api);
      await daemonSetAgent(kc);
    });
    api = new ContainerRestartApi(kc);
    ns = await createNamespace(kc, 'gate');
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          nodeName: env.nodeName,
          terminationGracePeriodSeconds: 5,
          readinessGates: [{ conditionType: READY_CONDITION }],
          volumes: [{ name: 'data', emptyDir: {} }],
          containers: [
            {
              name: 'app',
              image: env.sandbox.images.appV1,
              args: ['sh', '-c', APP],
              volumeMounts: [{ name: 'data', mountPath: '/data' }],
              readinessProbe: { exec: { command: ['test', '-f', '/tmp/release'] }, periodSeconds: 1, failureThreshold: 1 },
            },
            { name: 'sidecar', image: env.sandbox.images.appV1, args: ['sh', '-c', `trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`] },
          ],
        },
      },
    });
    await ready();
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
    rt.close();
  });

  for (const [name, image] of [
    ['same image', undefined],
    ['image change', env.sandbox.images.appV2],
  ] as const) {
    it(`${name}: the gate is True before the API server shows the new instance, and the pod is not Ready until its probe passes`, async () => {
      const before = await ready();
      const oldId = appId(before);
      const seen: Seen[] = [];
      const watch = await new Watch(kc).watch(
        `/api/v1/namespaces/${ns}/pods`,
        { fieldSelector: 'metadata.name=web', resourceVersion: before.metadata?.resourceVersion },
        (_t, p: V1Pod) => {
          const a = app(p);
          const g = cond(p, READY_CONDITION);
          seen.push({ rv: Number(p.metadata?.resourceVersion), ready: isReady(p), gate: `${g?.status}/${g?.reason}`, appId: appId(p), appRunning: Boolean(a?.state?.running), appReady: a?.ready === true });
        },
        () => undefined,
      );
      const crName = `bounce-${image ? 'v2' : 'same'}`;
      try {
        await api.create(containerRestart(ns, crName, { podName: 'web', containers: [{ name: 'app', ...(image ? { image } : {}) }], strategy: { gracePeriodSeconds: 5, minReadySeconds: 0 } }));
        // The world held: the new instance runs (in the API server's status) and is not ready, the gate is True,
        // and the kubelet has written a status that holds both (its sync after the gate): Ready must be False there.
        const held = await until(
          'the kubelet to show the new instance running, not ready, with the gate True',
          60_000,
          async () => seen.find((s) => s.appId !== oldId && s.appId !== '' && s.appRunning && !s.appReady && s.gate === 'True/Restarted'),
          () => JSON.stringify(seen),
        );
        assert.equal(held.ready, false, 'Ready while the new instance is not ready');
        const drainAt = seen.findIndex((s) => s.gate.startsWith('False/'));
        assert.ok(drainAt >= 0, `the gate went False before the stop: ${JSON.stringify(seen)}`);
        // The gate came from the runtime's sight: True in a version whose status does not show the new instance running yet.
        const opened = seen.find((s) => s.gate === 'True/Restarted');
        assert.ok(opened && !(opened.appRunning && opened.appId !== oldId), `the gate opened only once the API server showed the new instance: ${JSON.stringify(seen)}`);
        // Let the new instance's probe pass, then Ready follows.
        const newId = held.appId;
        const r = await rt.exec(newId, ['touch', '/tmp/release'], 10);
        assert.equal(r.exitCode, 0, r.stderr);
        const done = await waitForStatus(api, ns, crName, (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 90_000);
        assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
        const after = await ready();
        assert.equal(appId(after), newId, 'the instance held is the one serving');
        // From the drain until the release, no version was Ready but with the old instance still running (the
        // kubelet flips Ready False at its next sync after the gate goes False; the drain waits for that).
        const releasedAt = seen.findIndex((s) => s.appId === newId && s.appReady);
        const readyEarly = seen.slice(drainAt, releasedAt < 0 ? seen.length : releasedAt).filter((s) => s.ready && !(s.appId === oldId && s.appRunning));
        assert.deepEqual(readyEarly, [], `Ready before the new instance was: ${JSON.stringify(seen)}`);
      } finally {
        watch.abort();
      }
    });
  }
});
