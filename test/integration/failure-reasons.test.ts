// One reason from where a failure happens to every output (issue 17), on the project's real one-node cluster:
// a crash, a pull failure, a timeout and a refusal, each asked for with a ContainerRestart of a kubelet-managed
// pod, show the same fixed word in the agent's gRPC operation view, the ContainerRestart status (top level, per
// container and as the Succeeded condition's reason), the pod's Warning Event, the metrics' reason label and,
// for the pull failure, the ImagePrewarm/NodePrewarm status. Where an output does not apply it is said so.
// The ContainerRestarts are taken by the agent that owns the node: the DaemonSet's (scripts/kube-deploy-agent),
// read through its hostPath socket and its metrics port; a second agent for the same node would race it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi, KubeConfig, type CoreV1Event, type V1Pod } from '@kubernetes/client-node';
import { AgentClient } from '../../src/api/client.js';
import { AgentError } from '../../src/errors.js';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import type { ContainerRestart, ContainerRestartSpec } from '../../src/controllers/container-restart/types.js';
import type { ImagePrewarm, NodePrewarm } from '../../src/controllers/image-prewarm/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { startAgent, type AgentProcess } from '../support/agent-process.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { daemonSetAgent } from '../support/daemonset-agent.js';
import { applyCrd, createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { applyCrds, deleteNodes, ensureNode } from '../support/kube-apply.js';
import { until } from '../support/kube-users.js';
import { ownAgentIdentity, type OwnAgentIdentity } from '../support/own-agent-identity.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = kubeEnv();
const G = { group: 'inplace-agent.io', version: 'v1alpha1' };

describe('one reason end to end: crash, pull failure, timeout, refusal (real cluster)', function () {
  this.timeout(240_000);
  const kc = new KubeConfig();
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let api: ContainerRestartApi;
  let ns = '';
  /** The DaemonSet agent's unix socket on this node (its hostPath run directory). */
  let agentSocket = '';
  let fleetAgent: AgentProcess | undefined;
  /** The objects of deploy/ (and its optional fleet RBAC) this test created for the fleet agent. */
  let fleetIdentity: OwnAgentIdentity | undefined;
  let metricsAddr = '';
  const fleetNode = `ireason-${process.pid}`;
  const prewarm = `ireason-${process.pid}`;
  const registry = env.sandbox.images.appV1.split('/')[0];
  const missing = `${registry}/inplace/none:missing-${process.pid}`;

  /** A pod of one container; readyOnV1: Ready only while the container runs the v1 image (/app/version). */
  const pod = async (name: string, readyOnV1 = false): Promise<V1Pod> => {
    const probe = readyOnV1 ? { readinessProbe: { exec: { command: ['sh', '-c', 'grep -q v1 /app/version'] }, periodSeconds: 1 } } : {};
    await core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name }, spec: { nodeName: env.nodeName, terminationGracePeriodSeconds: 2, containers: [{ name: 'app', image: env.sandbox.images.appV1, ...probe }] } },
    });
    const deadline = Date.now() + 60_000;
    for (;;) {
      const p = await core.readNamespacedPod({ name, namespace: ns });
      if (p.status?.containerStatuses?.[0]?.state?.running) return p;
      if (Date.now() > deadline) throw new Error(`pod ${name} not running: ${JSON.stringify(p.status)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  /** Runs a ContainerRestart to its end and returns it. */
  const run = async (name: string, spec: ContainerRestartSpec): Promise<ContainerRestart> => {
    await api.create(containerRestart(ns, name, spec));
    return waitForStatus(api, ns, name, (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 120_000);
  };

  /** The agent's own view of an operation, over gRPC. */
  const view = async (id: string) => {
    const c = new AgentClient(`unix://${agentSocket}`);
    try {
      return await c.getOperation(id);
    } finally {
      c.close();
    }
  };

  /**
   * The Warning Events the agent recorded on a pod about the operation's outcome. These pods have no readiness
   * gate and no preStop, so each stop also brings the RestartedUndrained warning (the drain's, not a failure's).
   */
  const warnings = async (podName: string): Promise<CoreV1Event[]> => {
    const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${podName}` });
    return list.items.filter((e) => e.type === 'Warning' && e.source?.component === 'inplace-agent' && e.reason !== 'RestartedUndrained');
  };

  /** The metrics' finished-operations counter for a state and reason (the agent's lifetime count: compare deltas). */
  const finishedCount = async (state: string, reason: string): Promise<number> => {
    const text = await (await fetch(`http://${metricsAddr}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('inplace_operations_total{') && l.includes(`state="${state}"`) && l.includes(`reason="${reason}"`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  /** The same word in the status (top, container, condition) and in the agent's operation view. */
  const sameEverywhere = async (cr: ContainerRestart, reason: string) => {
    const st = cr.status;
    assert.equal(st?.phase, 'Failed', JSON.stringify(st));
    assert.equal(st?.reason, reason, JSON.stringify(st));
    assert.equal(st?.conditions?.find((c) => c.type === 'Succeeded')?.reason, reason);
    const op = await view(st?.operationId ?? '');
    assert.equal(op.reason, reason, 'gRPC operation view');
    return op;
  };

  before(async function () {
    await requireRuntime(this, `the test cluster (kubeconfig ${env.kubeconfig})`, async () => {
      kc.loadFromFile(env.kubeconfig);
      core = kc.makeApiClient(CoreV1Api);
      await core.readNode({ name: env.nodeName });
    });
    custom = kc.makeApiClient(CustomObjectsApi);
    await applyCrd(kc);
    await applyCrds(kc, ['imageprewarm.yaml', 'nodeprewarm.yaml']);
    api = new ContainerRestartApi(kc);
    ns = await createNamespace(kc, 'kreason');
    await requireRuntime(this, `the agent's DaemonSet inplace-system/inplace-agent Ready on node ${env.nodeName} (scripts/kube-deploy-agent)`, async () => {
      ({ socket: agentSocket, metricsAddr } = await daemonSetAgent(kc));
      await fetch(`http://${metricsAddr}/metrics`).then((r) => r.text());
    });
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed' && fleetAgent) process.stderr.write(`--- fleet agent (last lines)\n${fleetAgent.log().split('\n').slice(-30).join('\n')}\n`);
  });

  after(async () => {
    await fleetAgent?.stop();
    await custom?.deleteClusterCustomObject({ ...G, plural: 'imageprewarms', name: prewarm }).catch(() => undefined);
    await custom?.deleteClusterCustomObject({ ...G, plural: 'nodeprewarms', name: fleetNode }).catch(() => undefined);
    if (core) await deleteNodes(kc, [fleetNode]);
    if (ns) await deleteNamespace(kc, ns);
    // Only this test's own identity: the shipped ServiceAccount's grants were never touched.
    await fleetIdentity?.remove();
  });

  it('a crash: ReplacementExitedDuringMinReady in the operation, the status, its condition, the container, the Event and the metrics', async () => {
    const p = await pod('crash');
    const before = await finishedCount('Failed', 'ReplacementExitedDuringMinReady');
    const cr = await run('crash', { podName: 'crash', containers: [{ name: 'app', image: env.sandbox.images.crash }], strategy: { minReadySeconds: 3, failurePolicy: 'Rollback' } });
    const reason = 'ReplacementExitedDuringMinReady';
    const op = await sameEverywhere(cr, reason);
    assert.equal(cr.status?.containers?.[0]?.reason, reason);
    assert.equal(op.containers[0].reason, reason);
    assert.equal(op.containers[0].step, 'RolledBack');
    const ev = await warnings(p.metadata?.name ?? '');
    assert.deepEqual([...new Set(ev.map((e) => e.reason))], [reason], JSON.stringify(ev.map((e) => [e.reason, e.message])));
    await until(`inplace_operations_total{state="Failed",reason="${reason}"} to move by one`, 10_000, async () => ((await finishedCount('Failed', reason)) === before + 1 ? true : undefined));
  });

  it('a pull failure: ImagePullFailed in the operation, the status, its condition and the metrics (nothing touched: no Event), and in the pre-warm status', async () => {
    const p = await pod('pull');
    const before = await finishedCount('Failed', 'ImagePullFailed');
    const cr = await run('pull', { podName: 'pull', containers: [{ name: 'app', image: missing }] });
    const reason = 'ImagePullFailed';
    const op = await sameEverywhere(cr, reason);
    assert.equal(op.state, 'Failed');
    assert.equal(op.containers[0].step, 'Waiting', 'nothing was touched');
    assert.deepEqual(await warnings(p.metadata?.name ?? ''), [], 'no Event: the pod was not touched');
    await until(`inplace_operations_total{state="Failed",reason="${reason}"} to move by one`, 10_000, async () => ((await finishedCount('Failed', reason)) === before + 1 ? true : undefined));

    // The same image pre-warmed by an agent that takes part in the fleet pre-warm, as a node of its own.
    await ensureNode(kc, fleetNode, { 'inplace-agent.test/reasons': `${process.pid}` });
    // With deploy/'s roles and the optional fleet RBAC (its slot Role in this test's fleet namespace), bound to a
    // ServiceAccount of this test's own: the shipped one, shared with the DaemonSet and other runs, is left alone.
    fleetIdentity = await ownAgentIdentity(kc, ns, randomBytes(3).toString('hex'));
    fleetAgent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.sandbox.criEndpoint, '--kubeconfig', fleetIdentity.kubeconfig, '--node-name', fleetNode, '--watch-namespace', `${ns}-none`, '--fleet-namespace', ns, '--fleet-poll', '300ms', '--fleet-backoff', '300ms']);
    await custom.createClusterCustomObject({
      ...G,
      plural: 'imageprewarms',
      body: { apiVersion: 'inplace-agent.io/v1alpha1', kind: 'ImagePrewarm', metadata: { name: prewarm }, spec: { images: [missing], nodeSelector: { 'inplace-agent.test/reasons': `${process.pid}` }, backoffLimit: 0 } },
    });
    const deadline = Date.now() + 90_000;
    for (;;) {
      const pw = (await custom.getClusterCustomObject({ ...G, plural: 'imageprewarms', name: prewarm })) as ImagePrewarm;
      const np = (await custom.getClusterCustomObject({ ...G, plural: 'nodeprewarms', name: fleetNode }).catch(() => undefined)) as NodePrewarm | undefined;
      const img = np?.status?.prewarms?.[prewarm]?.images[0];
      const failed = pw.status?.failedNodes?.find((f) => f.node === fleetNode);
      if (img?.phase === 'Failed' && failed) {
        assert.equal(img.reason, reason, JSON.stringify(img));
        assert.equal(failed.reason, reason, JSON.stringify(failed));
        assert.match(failed.message ?? '', new RegExp(missing.replace(/[.:/]/g, '.')));
        assert.doesNotMatch(failed.message ?? '', /^ImagePullFailed/, 'the reason is a field, not a prefix');
        break;
      }
      if (Date.now() > deadline) throw new Error(`pre-warm did not fail: ${JSON.stringify({ pw: pw.status, np: np?.status })}\n${fleetAgent.log().split('\n').slice(-20).join('\n')}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  });

  it('a timeout: DeadlineExceeded in the operation, the status, its condition, the container, the Event and the metrics', async () => {
    // v2 runs but never becomes Ready (its readiness probe looks for v1): the deadline ends the verification.
    const p = await pod('slow', true);
    const before = await finishedCount('Failed', 'DeadlineExceeded');
    const cr = await run('slow', { podName: 'slow', containers: [{ name: 'app', image: env.sandbox.images.appV2 }], strategy: { minReadySeconds: 1, gracePeriodSeconds: 2, failurePolicy: 'Rollback' }, activeDeadlineSeconds: 10 });
    const reason = 'DeadlineExceeded';
    const op = await sameEverywhere(cr, reason);
    assert.equal(cr.status?.containers?.[0]?.reason, reason);
    assert.equal(op.containers[0].reason, reason);
    const ev = await warnings(p.metadata?.name ?? '');
    assert.deepEqual([...new Set(ev.map((e) => e.reason))], [reason], JSON.stringify(ev.map((e) => [e.reason, e.message])));
    await until(`inplace_operations_total{state="Failed",reason="${reason}"} to move by one`, 10_000, async () => ((await finishedCount('Failed', reason)) === before + 1 ? true : undefined));
  });

  it('a refusal: ContainerNotFound in the status and its condition, and from the gRPC Restart call (no operation: no Event, no metric)', async () => {
    const p = await pod('refuse');
    const cr = await run('refuse', { podName: 'refuse', containers: [{ name: 'nope' }] });
    const reason = 'ContainerNotFound';
    assert.equal(cr.status?.reason, reason, JSON.stringify(cr.status));
    assert.equal(cr.status?.conditions?.find((c) => c.type === 'Succeeded')?.reason, reason);
    const c = new AgentClient(`unix://${agentSocket}`);
    try {
      await assert.rejects(c.restart({ pod: `${ns}/refuse`, containers: ['nope'] }), (err: unknown) => err instanceof AgentError && err.reason === reason);
    } finally {
      c.close();
    }
    assert.deepEqual(await warnings(p.metadata?.name ?? ''), []);
  });
});
