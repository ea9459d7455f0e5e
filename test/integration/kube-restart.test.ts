// Kubernetes mode against the real one-node cluster (scripts/kube-sandbox): the agent runs as a host process
// on the cluster's containerd, as deploy/'s ServiceAccount, and restarts kubelet-managed containers through the
// kubelet. Everything asserted is read back from the API server, the runtime or the pod's emptyDir.
import assert from 'node:assert/strict';
import { DiscoveryV1Api, Watch, type CoreV1Api, type KubeConfig, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { AgentClient } from '../../src/api/client.js';
import type { OperationView as Operation } from '../../src/api/convert.js';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { ctl, exitWithin, startAgent, type AgentProcess } from '../support/agent-process.js';
import { agentKubeconfig, deleteObjects, ensureObjects, shippedObjects } from '../support/kube-shipped-rbac.js';
import { kubeTest, until } from '../support/kube-test.js';

const env = kubeEnv();
const ns = `kagent-${process.pid}`;

/** A container of the app image running a shell script (the image runs its arguments instead of the app). */
function shell(name: string, image: string, script: string) {
  return { name, image, args: ['sh', '-c', script], volumeMounts: [{ name: 'data', mountPath: '/data' }] };
}

/** Exits 0 on SIGTERM, logging it to the emptyDir; logs each start too. */
const APP = (tag: string) =>
  `echo ${tag} >> /data/starts.log; trap 'echo ${tag} >> /data/term.log; exit 0' TERM; while :; do sleep 1 & wait $!; done`;

function podSpec(name: string, restartPolicy = 'Always'): V1Pod {
  return {
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: {
      nodeName: env.nodeName,
      restartPolicy,
      terminationGracePeriodSeconds: 5,
      readinessGates: [{ conditionType: READY_CONDITION }],
      volumes: [{ name: 'data', emptyDir: {} }],
      containers: [
        { ...shell('app', env.sandbox.images.appV1, APP('app')), lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo app >> /data/prestop.log'] } } } },
        shell('sidecar', env.sandbox.images.appV1, APP('sidecar')),
        shell('logger', env.sandbox.images.appV1, APP('logger')),
      ],
    },
  };
}

describe('Kubernetes mode: restarts through the kubelet (real cluster)', function () {
  this.timeout(180_000);
  let kc: KubeConfig;
  let core: CoreV1Api;
  let disco: DiscoveryV1Api;
  let agent: AgentProcess | undefined;
  const rt = new CriRuntime(env.sandbox.criEndpoint);
  const web = 'web';

  const read = (name = web) => core.readNamespacedPod({ name, namespace: ns });
  const status = (p: V1Pod, c: string) => p.status?.containerStatuses?.find((s) => s.name === c);
  /** deploy/'s ServiceAccount (agentKubeconfig), never admin. */
  let agentKc = '';
  let installed: KubernetesObject[] = [];
  // The cluster is shared: this agent takes the ContainerRestarts of this test's namespace only (others' runs
  // create theirs on the same node, for the DaemonSet's agent).
  const agentArgs = () => ['--runtime', 'cri', '--cri-endpoint', env.sandbox.criEndpoint, '--kubeconfig', agentKc, '--node-name', env.nodeName, '--grace', '5s', '--min-ready', '500ms', '--watch-namespace', ns];
  const file = async (p: V1Pod, path: string) => {
    const id = (status(p, 'sidecar')?.containerID ?? '').replace(/^containerd:\/\//, '');
    const r = await rt.exec(id, ['sh', '-c', `cat ${path} 2>/dev/null || true`], 10);
    return r.stdout.split('\n').filter((l) => l !== '');
  };
  const ready = (name = web) =>
    until(`pod ${name} Ready`, 60_000, async () => {
      const p = await read(name);
      return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
    });
  /** The newest operation on this test's pod. */
  const lastOp = async (socket: string): Promise<Operation> => {
    const c = new AgentClient(`unix://${socket}`);
    try {
      return (await c.listOperations(`${ns}/${web}`))[0];
    } finally {
      c.close();
    }
  };

  before(async function () {
    ({ kc, core } = await kubeTest(this));
    disco = kc.makeApiClient(DiscoveryV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    // The objects of deploy/ are the DaemonSet's on the shared cluster: kept as they are, made only where missing.
    installed = await ensureObjects(kc, shippedObjects(['namespace.yaml', 'serviceaccount.yaml', 'rbac.yaml']));
    agentKc = await agentKubeconfig(kc);
    agent = await startAgent(agentArgs());
    await core.createNamespacedPod({ namespace: ns, body: podSpec(web) });
    // A second endpoint of the Service: the only ready endpoint of a Service is not drained (docs/kubernetes.md#drain).
    const peer = podSpec(`${web}-peer`);
    peer.metadata!.labels = { app: web };
    peer.spec!.containers = [shell('app', env.sandbox.images.appV1, APP('app'))];
    await core.createNamespacedPod({ namespace: ns, body: peer });
    await core.createNamespacedService({ namespace: ns, body: { metadata: { name: web }, spec: { selector: { app: web }, ports: [{ port: 80, targetPort: 8080 }] } } });
  });

  after(async function () {
    await agent?.stop();
    if (core) await core.deleteNamespace({ name: ns, gracePeriodSeconds: 0 }).catch(() => undefined);
    if (kc) await deleteObjects(kc, installed.filter((o) => o.kind !== 'Namespace'));
    rt.close();
  });

  it('sets the readiness gate condition on a pod that lacks it, so the pod becomes Ready', async () => {
    const p = await ready();
    const cond = p.status?.conditions?.find((c) => c.type === READY_CONDITION);
    assert.equal(cond?.status, 'True');
    assert.equal(cond?.reason, 'Ready');
  });

  it('same image: drains (address leaves the EndpointSlice before the stop), keeps the pod, restarts only the target', async () => {
    const before = await ready();
    const ip = before.status?.podIP ?? '';
    const sandboxBefore = (await rt.listPods()).find((s) => s.uid === before.metadata?.uid && s.state === 'ready')?.id;
    assert.ok(sandboxBefore);
    await until('the address in the EndpointSlice', 30_000, async () => {
      const slices = await disco.listNamespacedEndpointSlice({ namespace: ns });
      return slices.items.some((s) => (s.endpoints ?? []).some((e) => e.addresses.includes(ip) && e.conditions?.ready)) ? true : undefined;
    });

    // Watch the condition and the EndpointSlice while the restart runs.
    const seen: string[] = [];
    const watch = await new Watch(kc).watch(`/api/v1/namespaces/${ns}/pods`, { fieldSelector: `metadata.name=${web}` }, (_type, obj: V1Pod) => {
      const c = obj.status?.conditions?.find((x) => x.type === READY_CONDITION);
      const s = c ? `${c.status}/${c.reason}` : 'none';
      if (seen.at(-1) !== s) seen.push(s);
    }, () => undefined);
    let leftAt: number | undefined;
    let backAt: number | undefined;
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const slices = await disco.listNamespacedEndpointSlice({ namespace: ns });
        const isReady = slices.items.some((s) => (s.endpoints ?? []).some((e) => e.addresses.includes(ip) && e.conditions?.ready));
        if (!isReady && leftAt === undefined) leftAt = Date.now();
        if (isReady && leftAt !== undefined && backAt === undefined) backAt = Date.now();
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const r = await ctl(agent!.socket, 'restart', `${ns}/${web}`, 'app');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    await until('the address back in the EndpointSlice', 30_000, async () => (backAt !== undefined ? true : undefined));
    polling = false;
    await poller;
    watch.abort();

    const op = await lastOp(agent!.socket);
    assert.equal(op.state, 'Succeeded');
    const stoppedAt = Date.parse(op.containers[0].steps.find((s) => s.step === 'Stopping')?.at ?? '');
    // leftAt is when this test's poll (every 50 ms, plus the list's round trip) first saw the address gone: an
    // upper bound that can trail the agent's own watch by that much. Without a drain the address would leave
    // only after the stop, by the kubelet's readiness report (about a second), so 250 ms still tells them apart.
    const POLL_SLACK_MS = 250;
    assert.ok(leftAt !== undefined && leftAt <= stoppedAt + POLL_SLACK_MS, `address left the slice at ${leftAt}, the stop was issued at ${stoppedAt}`);
    assert.ok(backAt! > stoppedAt);
    const draining = seen.indexOf('False/Draining');
    assert.ok(draining >= 0 && seen.indexOf('True/Restarted') > draining, `condition went ${seen.join(' -> ')}`);

    const after = await read();
    assert.equal(after.metadata?.uid, before.metadata?.uid);
    assert.equal(after.status?.podIP, ip);
    assert.equal((await rt.listPods()).find((s) => s.uid === before.metadata?.uid && s.state === 'ready')?.id, sandboxBefore);
    for (const c of ['sidecar', 'logger']) {
      assert.equal(status(after, c)?.containerID, status(before, c)?.containerID, `${c} untouched`);
      assert.equal(status(after, c)?.restartCount, status(before, c)?.restartCount);
    }
    assert.notEqual(status(after, 'app')?.containerID, status(before, 'app')?.containerID);
    assert.equal(status(after, 'app')?.restartCount, (status(before, 'app')?.restartCount ?? 0) + 1);
    const cond = after.status?.conditions?.find((c) => c.type === READY_CONDITION);
    // The containers and images; the downtime is the operation's (and the ContainerRestart's), not the condition's,
    // so that the condition opened at the start and the end's are the same write.
    assert.match(cond?.message ?? '', /^restarted app \([^)]+\)$/);
    // The emptyDir kept what was written before; the hook and the stop each ran once.
    assert.deepEqual((await file(after, '/data/starts.log')).filter((l) => l === 'app'), ['app', 'app']);
    assert.deepEqual(await file(after, '/data/prestop.log'), ['app']);
    assert.deepEqual(await file(after, '/data/term.log'), ['app']);
  });

  it('agent SIGKILLed after the stop was issued: the next agent finishes, with no second preStop and no second stop', async () => {
    await agent!.stop();
    const crashing = await startAgent(agentArgs(), { stateDir: agent!.stateDir, env: { INPLACE_AGENT_FAULT_CRASH_AFTER_STEP: 'Stopped' } });
    let before: V1Pod;
    let prestops: number;
    let terms: number;
    let op: { id: string };
    try {
      before = await ready();
      prestops = (await file(before, '/data/prestop.log')).length;
      terms = (await file(before, '/data/term.log')).length;
      const c = new AgentClient(`unix://${crashing.socket}`);
      op = await c.restart({ pod: `${ns}/${web}`, containers: ['app'], images: {}, graceSeconds: 5, graceSet: true, minReadyMs: '500', minReadySet: true, timeoutMs: '120000' }).finally(() => c.close());
      // It stops the container and then kills itself; a crash that never comes fails here instead of hanging.
      assert.equal((await exitWithin(crashing, 60_000))?.signal, 'SIGKILL', crashing.log());
    } finally {
      await crashing.stop();
    }
    agent = await startAgent(agentArgs(), { stateDir: crashing.stateDir });
    const done = await until('the resumed operation to end', 60_000, async () => {
      const cur = await lastOp(agent!.socket);
      return cur.id === op.id && ['Succeeded', 'Failed'].includes(cur.state) ? cur : undefined;
    });
    assert.equal(done.state, 'Succeeded', done.error);
    const after = await read();
    assert.equal(status(after, 'app')?.restartCount, (status(before, 'app')?.restartCount ?? 0) + 1);
    assert.equal((await file(after, '/data/prestop.log')).length, prestops + 1, 'one preStop');
    assert.equal((await file(after, '/data/term.log')).length, terms + 1, 'one stop');
  });

  it("new image: only the target recreated, the spec shows the new image, and the image's Pulled is the kubelet's alone", async () => {
    const before = await ready();
    const r = await ctl(agent!.socket, 'restart', `${ns}/${web}`, 'app', '--image', `app=${env.sandbox.images.appV2}`);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const after = await read();
    assert.equal(after.spec?.containers.find((c) => c.name === 'app')?.image, env.sandbox.images.appV2);
    assert.notEqual(status(after, 'app')?.containerID, status(before, 'app')?.containerID);
    for (const c of ['sidecar', 'logger']) assert.equal(status(after, c)?.containerID, status(before, c)?.containerID, `${c} untouched`);
    // The kubelet records Pulled ("already present on machine") as it starts the new instance; the agent, which
    // downloaded nothing here, records none of its own beside it (issue 29: no event the kubelet writes anyway).
    const pulledBy = (events: { reason?: string; source?: { component?: string }; message?: string }[], component: string) =>
      events.filter((e) => e.reason === 'Pulled' && e.source?.component === component && (e.message ?? '').includes(env.sandbox.images.appV2));
    const events = await until("the kubelet's Pulled event", 30_000, async () => {
      const items = (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${web}` })).items;
      return pulledBy(items, 'kubelet').length > 0 ? items : undefined;
    });
    const killing = events.filter((e) => e.reason === 'Killing' && e.source?.component === 'kubelet' && e.involvedObject.fieldPath === 'spec.containers{app}' && /definition changed/.test(e.message ?? ''));
    assert.equal(killing.length, 1, 'the kubelet killed the old instance because its definition changed');
    assert.deepEqual(pulledBy(events, 'inplace-agent').filter((e) => /already present/.test(e.message ?? '')).map((e) => e.message), [], "no Pulled of the agent's beside the kubelet's");
  });

  it('a new image that crashes: Failed with the exit code, long before the deadline, and rolled back to the old image', async () => {
    const before = await ready();
    const oldImage = before.spec?.containers.find((c) => c.name === 'app')?.image;
    const began = Date.now();
    // A min-ready window longer than the kubelet's status round trip (about 1 s): the crash must be seen in it.
    // The operation still fails as soon as the crash is seen, not at the window's end.
    const r = await ctl(agent!.socket, 'restart', `${ns}/${web}`, 'app', '--image', `app=${env.sandbox.images.crash}`, '--timeout', '10m', '--min-ready', '15s');
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.ok(Date.now() - began < 60_000, 'ended long before the 10m deadline');
    const op = await lastOp(agent!.socket);
    assert.equal(op.state, 'Failed');
    assert.equal(op.containers[0].step, 'RolledBack');
    assert.equal(op.containers[0].exitCode, 3);
    const after = await ready();
    assert.equal(after.spec?.containers.find((c) => c.name === 'app')?.image, oldImage);
    assert.ok(status(after, 'app')?.state?.running);
    const cond = after.status?.conditions?.find((c) => c.type === READY_CONDITION);
    assert.equal(cond?.status, 'True');
    assert.equal(cond?.reason, 'RolledBack');
  });

  it('cancelled while verifying an image change: ends Cancelled at once, the running new instance and its image kept', async () => {
    const before = await ready();
    const cur = before.spec?.containers.find((c) => c.name === 'app')?.image;
    const next = cur === env.sandbox.images.appV1 ? env.sandbox.images.appV2 : env.sandbox.images.appV1;
    const began = Date.now();
    const r = await ctl(agent!.socket, 'restart', `${ns}/${web}`, 'app', '--image', `app=${next}`, '--min-ready', '10m', '--timeout', '20m', '--no-wait');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const verifying = await until('the new instance running, in its min-ready window', 60_000, async () => {
      const op = await lastOp(agent!.socket);
      return op.containers[0].step === 'Verifying' && op.containers[0].newId ? op : undefined;
    });
    const c = await ctl(agent!.socket, 'cancel', verifying.id);
    assert.equal(c.code, 0, c.stdout + c.stderr);
    const ended = await until('the operation ended', 30_000, async () => {
      const op = await lastOp(agent!.socket);
      return op.finishedAt ? op : undefined;
    });
    assert.ok(Date.now() - began < 90_000, 'ended long before the 10 min min-ready window');
    assert.equal(ended.state, 'Cancelled', ended.error);
    assert.match(ended.error ?? '', /kept without the full min-ready window: app/);
    const after = await read();
    assert.equal(after.spec?.containers.find((x) => x.name === 'app')?.image, next, 'the new image stays in the spec');
    assert.equal(status(after, 'app')?.containerID?.replace(/^containerd:\/\//, ''), verifying.containers[0].newId, 'the verified instance is the one running');
    assert.ok(status(after, 'app')?.state?.running);
    // The condition is written once the operation has ended (after its journal record): read until it lands.
    let lastCond = '';
    await until('the condition True again', 15_000, async () => {
      const c = (await read()).status?.conditions?.find((x) => x.type === READY_CONDITION);
      lastCond = `${c?.status} ${c?.reason}: ${c?.message}`;
      return c?.status === 'True' ? c : undefined;
    }).catch((err: unknown) => assert.fail(`${String(err)}; last: ${lastCond}`));
  });

  it('restartPolicy Never: refused with the reason, nothing stopped', async () => {
    await core.createNamespacedPod({ namespace: ns, body: podSpec('never', 'Never') });
    const before = await ready('never');
    const r = await ctl(agent!.socket, 'restart', `${ns}/never`, 'app');
    assert.equal(r.code, 1);
    assert.match(r.stderr + r.stdout, /restartPolicy Never/);
    const after = await read('never');
    assert.equal(status(after, 'app')?.containerID, status(before, 'app')?.containerID);
    assert.equal(status(after, 'app')?.restartCount, 0);
    assert.deepEqual(await file(after, '/data/term.log'), []);
    assert.equal(after.status?.conditions?.find((c) => c.type === READY_CONDITION)?.reason, 'Ready');
  });
});
