// Restarts that clients behind a Service cannot see (issue 16), on the real cluster with its real kube-proxy,
// through ContainerRestart objects handled by the DaemonSet's agent (scripts/kube-deploy-agent, hostNetwork,
// reading this cluster's kube-proxy metrics). Four gated replicas of a small HTTP server behind a NodePort
// Service; during each restart (and 2 s before and after) one client opens a new connection every 10 ms to the
// ClusterIP, one to the NodePort on the node's address, and one reuses keep-alive connections. (The node's
// address, not 127.0.0.1: the test cluster's kube-proxy has iptables.localhostNodePorts false and
// nodePortAddresses [NODE_IP/32] (scripts/kube-sandbox), so NodePorts answer there only; the sandbox stays so.)
// The failures are counted; `drain: 0` shows the count is real. A one-replica Service has its window without a ready
// endpoint measured by the agent.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { AgentClient } from '../../src/api/client.js';
import type { OperationView } from '../../src/api/convert.js';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import type { ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { daemonSetAgent } from '../support/daemonset-agent.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { retag } from '../support/registry-retag.js';
import { requireRuntime } from '../support/require-runtime.js';
import { agentImage, createService, serverPod, waitReadyEndpoints, type ServiceAddress } from '../support/traffic-fixture.js';
import { describeTallies, failedOf, keepAliveClient, newConnectionClient, waitServing, withTraffic, type Tally } from '../support/traffic.js';
import { describeStray, explainRound, traceDataPlane, waitForRules, type TraceEvent } from '../support/traffic-trace.js';

const env = kubeEnv();
/** This cluster's kube-proxy metrics address (scripts/kube-sandbox: PORT_BASE + 5). */
const PROXY_METRICS_URL = `http://127.0.0.1:${Number(process.env.INPLACE_KUBE_PORT_BASE ?? '16440') + 5}`;
const REPLICAS = 4;
const MARGIN_MS = 2000;
/** At most this long from the kubelet's Ready to the EndpointSlice showing it (and the agent's watch seeing it), on the loaded test cluster. */
const SLICE_UPDATE_MS = 1500;

describe('restarts behind a Service: what clients see (real cluster, real kube-proxy)', function () {
  this.timeout(300_000);
  const kc = new KubeConfig();
  let core: CoreV1Api;
  let crs: ContainerRestartApi;
  let ns: string | undefined;
  let image = '';
  let web: ServiceAddress;
  let solo: ServiceAddress;
  let agentSocket = '';
  let n = 0;
  /** Every local port the NodePort client was answered on, over the rounds. */
  const nodePortPorts = new Set<number>();

  const clients = (svc: ServiceAddress) => ({
    clusterIp: () => newConnectionClient({ host: svc.clusterIp, port: svc.port }),
    nodePort: () => newConnectionClient({ host: svc.nodeIp, port: svc.nodePort }),
    keepAlive: () => keepAliveClient({ host: svc.clusterIp, port: svc.port }, 2),
  });

  /** Creates one ContainerRestart per pod, `gapMs` apart, and waits until each has ended; returns them. */
  const restart = async (pods: string[], gapMs: number, strategy: ContainerRestart['spec']['strategy'] = {}, newImage?: string): Promise<ContainerRestart[]> => {
    const names: string[] = [];
    for (const [i, pod] of pods.entries()) {
      if (i > 0) await new Promise((r) => setTimeout(r, gapMs));
      const name = `r${++n}-${pod}`;
      await crs.create(containerRestart(ns as string, name, { podName: pod, containers: [{ name: 'app', ...(newImage ? { image: newImage } : {}) }], strategy: { minReadySeconds: 0, ...strategy } }));
      names.push(name);
    }
    return Promise.all(names.map((name) => waitForStatus(crs, ns as string, name, (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 120_000)));
  };
  const operation = async (cr: ContainerRestart): Promise<OperationView> => {
    const c = new AgentClient(`unix://${agentSocket}`);
    try {
      return await c.getOperation(cr.status?.operationId ?? '');
    } finally {
      c.close();
    }
  };
  /**
   * One round of traffic around `fn` on the web Service, with its data plane traced; when any client saw a failure,
   * prints the round's timeline (operations' steps, kube-proxy's syncs and rules, failures, answers per pod).
   */
  const tracedRound = async (fn: () => Promise<ContainerRestart[]>) => {
    const trace = traceDataPlane(PROXY_METRICS_URL, { namespace: ns as string, name: 'web', ...web });
    const round = await withTraffic(clients(web), MARGIN_MS, fn).catch(async (err: unknown) => {
      await trace.stop();
      throw err;
    });
    const plane = await trace.stop();
    // Every round: how many of the NodePort client's ports earlier rounds of this file used already (a port whose
    // old conntrack entry still lives may follow it), and the entries that were not closing normally.
    const ports = round.tallies.nodePort?.log.flatMap((r) => (r.localPort ? [r.localPort] : [])) ?? [];
    const reused = ports.filter((p) => nodePortPorts.has(p)).length;
    for (const p of ports) nodePortPorts.add(p);
    console.log(`      data plane: nodePort client ports ${new Set(ports).size} (${reused} used in earlier rounds); conntrack entries not closing normally: ${describeStray(plane.stray, round.tallies)}`);
    if (failedOf(round.tallies) > 0) console.log(`      timeline of the round (epoch ${Math.min(...plane.events.map((e) => e.at))}):\n${await explain(round.result, round.tallies, plane)}`);
    return round;
  };
  const explain = async (done: ContainerRestart[], tallies: Record<string, Tally>, plane: Parameters<typeof explainRound>[3]): Promise<string> => {
    const steps: TraceEvent[] = [];
    const restarted: { pod: string; from: number }[] = [];
    for (const cr of done) {
      const pod = cr.spec.podName;
      const op = await operation(cr).catch(() => undefined);
      for (const st of op?.containers[0]?.steps ?? []) steps.push({ at: Date.parse(st.at), text: `${pod}: ${st.step}${st.detail ? ` (${st.detail})` : ''}` });
      restarted.push({ pod, from: Math.min(...steps.filter((e) => e.text.startsWith(`${pod}:`)).map((e) => e.at)) });
    }
    let text = explainRound(tallies, steps, restarted, plane);
    const pods = await core.listNamespacedPod({ namespace: ns as string });
    for (const p of pods.items) if (p.status?.podIP) text = text.replaceAll(`${p.status.podIP}:`, `${p.metadata?.name}@${p.status.podIP}:`);
    return text;
  };
  const succeeded = (done: ContainerRestart[]) => {
    for (const cr of done) assert.equal(cr.status?.phase, 'Succeeded', `${cr.metadata.name}: ${JSON.stringify(cr.status)}`);
  };
  const noFailures = (tallies: Record<string, Tally>) => {
    const text = describeTallies(tallies);
    console.log(`      traffic: ${text}`);
    for (const t of Object.values(tallies)) assert.ok(t.ok > 100, `the clients got answers: ${text}`);
    assert.equal(failedOf(tallies), 0, `no failed request: ${text}`);
  };
  const settled = () => waitReadyEndpoints(kc, ns as string, 'web', REPLICAS);

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet inplace-system/inplace-agent on the test cluster (scripts/kube-deploy-agent)`, async () => {
      kc.loadFromFile(env.kubeconfig);
      core = kc.makeApiClient(CoreV1Api);
      image = await agentImage(kc);
      agentSocket = (await daemonSetAgent(kc)).socket;
    });
    crs = new ContainerRestartApi(kc);
    ns = await createNamespace(kc, 'ktraffic');
    for (let i = 0; i < REPLICAS; i++) await core.createNamespacedPod({ namespace: ns, body: serverPod(ns, `web-${i}`, 'web', image) });
    await core.createNamespacedPod({ namespace: ns, body: serverPod(ns, 'solo-0', 'solo', image) });
    web = await createService(kc, ns, 'web', 'web');
    solo = await createService(kc, ns, 'solo', 'solo');
    await settled();
    await waitReadyEndpoints(kc, ns, 'solo', 1);
    // Ready endpoints in the slices are not yet rules in kube-proxy: no client starts before kube-proxy's nat table
    // has them (a NodePort connection refused for want of endpoints would leave its client port pointing at the
    // host for 120 s: waitForRules), then wait until the clients are answered.
    await waitForRules({ namespace: ns, name: 'web', ...web }, REPLICAS);
    await waitForRules({ namespace: ns, name: 'solo', ...solo }, 1);
    await waitServing(clients(web));
    await waitServing({ clusterIp: clients(solo).clusterIp });
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
  });

  it('one restart, same image: 0 failed; the drain waited for kube-proxy and saw the address back', async () => {
    const { result, tallies } = await tracedRound(() => restart(['web-0'], 0));
    succeeded(result);
    noFailures(tallies);
    const op = await operation(result[0]);
    const c = op.containers[0];
    const draining = c.steps.find((s) => s.step === 'Draining')?.detail ?? '';
    assert.match(draining, /^EndpointSlices \S+ let the address go: \d+ ms; kube-proxy \(iptables\) applied every change \(last sync [+-]?\d+ ms from the slice change\), minSyncPeriod 1000 ms: \d+ ms/, draining);
    assert.match(c.steps.find((s) => s.step === 'Verified')?.detail ?? '', /^a ready endpoint again after \d+ ms$/);
    assert.equal(c.unservedMs, undefined, 'three other replicas served meanwhile');
    assert.equal(result[0].status?.containers?.[0]?.traffic, c.traffic, 'the ContainerRestart shows the same traffic note');
    await settled();
  });

  it('one image change: 0 failed', async () => {
    const next = await retag(env.sandbox.registry, image, `traffic-${randomBytes(3).toString('hex')}`);
    const { result, tallies } = await tracedRound(() => restart(['web-1'], 0, {}, next));
    succeeded(result);
    assert.equal(result[0].status?.containers?.[0]?.newImage, next);
    noFailures(tallies);
    await settled();
  });

  it('three restarts started 300 ms apart on 4 replicas: 0 failed', async () => {
    const { result, tallies } = await tracedRound(() => restart(['web-0', 'web-2', 'web-3'], 300));
    succeeded(result);
    noFailures(tallies);
    await settled();
  });

  it('drain 0 (no drain): the same three restarts fail requests, and the clients count them', async () => {
    const { result, tallies } = await tracedRound(() => restart(['web-1', 'web-2', 'web-3'], 300, { drainSeconds: 0 }));
    succeeded(result);
    const text = describeTallies(tallies);
    console.log(`      traffic: ${text}`);
    assert.ok(failedOf(tallies) > 0, `requests failed without a drain: ${text}`);
    assert.equal((await operation(result[0])).containers[0].steps.find((s) => s.step === 'Draining')?.detail, 'drain 0: nothing waited for');
    await settled();
  });

  it('one replica: the window without a ready endpoint is measured and reported, within stop + start + readiness', async () => {
    const { result, tallies } = await withTraffic({ clusterIp: clients(solo).clusterIp }, MARGIN_MS, () => restart(['solo-0'], 0));
    succeeded(result);
    const op = await operation(result[0]);
    const c = op.containers[0];
    console.log(`      one replica: ${c.traffic}; traffic: ${describeTallies(tallies)}`);
    assert.match(c.steps.find((s) => s.step === 'Draining')?.detail ?? '', /the only ready endpoint of solo: not drained/);
    assert.ok(c.unservedMs !== undefined && c.unservedMs > 0, `a window was measured: ${c.traffic}`);
    assert.equal(result[0].status?.containers?.[0]?.unservedMilliseconds, c.unservedMs, 'the ContainerRestart reports it');
    // Stop + start + readiness: from the stop call to the kubelet reporting the new instance ready (minReady 0).
    // The condition is not written (the only endpoint is not held False): the window opens after the stop, and
    // closes one EndpointSlice update after Ready (SLICE_UPDATE_MS).
    const at = (step: string) => Date.parse(c.steps.find((s) => s.step === step)?.at ?? '');
    const ownMs = at('Verified') - at('Stopping');
    assert.ok(c.unservedMs <= ownMs + SLICE_UPDATE_MS, `window ${c.unservedMs} ms, the container's own stop + start + readiness ${ownMs} ms (+${SLICE_UPDATE_MS} ms for the slices)`);
    assert.ok(failedOf(tallies) > 0, 'with one replica the restart is seen (the window is real)');
  });
});

