// Kubernetes mode's metrics, scraped from /metrics of real agents on the real cluster, before and after the work
// they count: a ContainerRestart run by the DaemonSet's agent on the first node (restart result and duration,
// the drain's slices part, API requests by verb), and an ImagePrewarm followed by an agent process that runs as
// deploy/'s ServiceAccount for a bare Node object of its own (the prewarm's nodes by state).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { startAgent, type AgentProcess } from '../support/agent-process.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { applyCrds, deleteNodes, ensureNamespace, ensureNode } from '../support/kube-apply.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { ownAgentIdentity, type OwnAgentIdentity } from '../support/own-agent-identity.js';
import { requireRuntime } from '../support/require-runtime.js';
import { daemonSetAgent } from '../support/daemonset-agent.js';
import { kubeTest, until } from '../support/kube-test.js';

const env = kubeEnv();
const G = { group: 'inplace-agent.io', version: 'v1alpha1' };
const run = randomBytes(3).toString('hex');
const APP = `trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`;

/** The sum of the samples of metric whose labels include every given one (0 when there are none). */
function sample(text: string, metric: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== metric) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

async function scrape(url: string): Promise<string> {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`GET ${url}: ${r.status}`);
  return r.text();
}

describe('Kubernetes-mode metrics move with the work they count (real cluster)', function () {
  this.timeout(180_000);
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let ns: string | undefined;
  /** /metrics of the DaemonSet's agent on the first node. */
  let dsMetrics = '';

  before(async function () {
    ({ kc, core } = await kubeTest(this));
    await requireRuntime(this, `the agent's DaemonSet Ready on node ${env.nodeName} (scripts/kube-deploy-agent)`, async () => {
      dsMetrics = `http://${(await daemonSetAgent(kc)).metricsAddr}/metrics`;
      await scrape(dsMetrics);
    });
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
  });

  it('a ContainerRestart: its result and duration by reason, the drain\'s slices part, API requests by verb and code', async () => {
    ns = await createNamespace(kc, 'kmetrics');
    await core.createNamespacedService({ namespace: ns, body: { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } } });
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'web', labels: { app: 'web' } },
        spec: {
          nodeName: env.nodeName,
          terminationGracePeriodSeconds: 5,
          readinessGates: [{ conditionType: READY_CONDITION }],
          containers: [{ name: 'app', image: env.sandbox.images.appV1, args: ['sh', '-c', APP] }],
        },
      },
    });
    // A second ready endpoint of the Service, so that draining web has somewhere else to send traffic.
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'peer', labels: { app: 'web' } },
        spec: { nodeName: env.nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: env.sandbox.images.appV1, args: ['sh', '-c', APP] }] },
      },
    });
    for (const name of ['web', 'peer']) {
      await until(`pod ${name} Ready`, 60_000, async () => {
        const p = await core.readNamespacedPod({ name, namespace: ns as string });
        return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
      });
    }
    const before = await scrape(dsMetrics);
    const api = new ContainerRestartApi(kc);
    await api.create(containerRestart(ns, 'bounce', { podName: 'web', containers: [{ name: 'app' }], strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } }));
    const done = await waitForStatus(api, ns, 'bounce', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 90_000);
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    // The status and the metrics are written by the same sync; the scrape may come a moment before the counter.
    const ok = { result: 'Succeeded', reason: '' };
    const after = await until('inplace_containerrestarts_total to move', 10_000, async () => {
      const t = await scrape(dsMetrics);
      return sample(t, 'inplace_containerrestarts_total', ok) > sample(before, 'inplace_containerrestarts_total', ok) ? t : undefined;
    });
    const moved = (metric: string, labels: Record<string, string> = {}) => sample(after, metric, labels) - sample(before, metric, labels);
    assert.ok(moved('inplace_containerrestart_duration_seconds_count', ok) >= 1, 'a duration was observed');
    assert.ok(moved('inplace_containerrestart_duration_seconds_sum', ok) > 0, 'the duration is above zero');
    assert.ok(moved('inplace_drain_duration_seconds_count', { part: 'slices' }) >= 1, "the drain's slices part was observed");
    assert.ok(moved('inplace_kube_api_requests_total', { verb: 'patch' }) >= 1, 'patches (condition, ContainerRestart status) were counted');
    assert.ok(moved('inplace_kube_api_requests_total', { verb: 'create' }) >= 1, 'creates (events) were counted');
    assert.ok(sample(after, 'inplace_kube_api_requests_total', { verb: 'watch', code: '200' }) >= 1, 'the watches were counted');
  });

  describe('an ImagePrewarm followed by an agent as deploy/ ships it', () => {
    const node = `ipm-${run}`;
    const fleetNs = `inplace-metrics-${run}`;
    const label = 'inplace-agent.test/metrics';
    const prewarm = `metrics-${run}`;
    let custom: k8s.CustomObjectsApi;
    let agent: AgentProcess | undefined;
    let url = '';
    /** deploy/'s roles, the optional fleet RBAC among them, bound to a ServiceAccount of this run's own. */
    let identity: OwnAgentIdentity | undefined;

    before(async () => {
      custom = kc.makeApiClient(k8s.CustomObjectsApi);
      await applyCrds(kc, ['imageprewarm.yaml', 'nodeprewarm.yaml']);
      await ensureNamespace(kc, fleetNs);
      identity = await ownAgentIdentity(kc, fleetNs, run);
      await ensureNode(kc, node, { [label]: run });
      const port = await freePort();
      url = `http://127.0.0.1:${port}/metrics`;
      // Its ContainerRestart watch is kept to this test's own empty namespace: the runtime is the first node's,
      // whose pods belong to the DaemonSet's agent.
      agent = await startAgent([
        ...['--runtime', 'cri', '--cri-endpoint', env.sandbox.criEndpoint, '--kubeconfig', identity.kubeconfig, '--node-name', node],
        ...['--watch-namespace', fleetNs, '--fleet-namespace', fleetNs, '--fleet-poll', '300ms', '--metrics-addr', `127.0.0.1:${port}`],
      ]);
    });

    after(async () => {
      await agent?.stop();
      await custom?.deleteClusterCustomObject({ ...G, plural: 'imageprewarms', name: prewarm }).catch(() => undefined);
      await custom?.deleteClusterCustomObject({ ...G, plural: 'nodeprewarms', name: node }).catch(() => undefined);
      await deleteNodes(kc, [node]);
      // The optional fleet RBAC (get on Secrets among it) was never granted to the shipped ServiceAccount: only
      // this run's own identity goes.
      await identity?.remove();
      await deleteNamespace(kc, fleetNs);
    });

    it('its nodes by state: the one node succeeded, none failed, pulling or waiting; gone with the object', async () => {
      // The API socket (what startAgent waits for) listens before /metrics, which opens once the Kubernetes-mode
      // parts have started: wait for the agent's own word that it listens.
      await until("the agent's /metrics to listen", 60_000, async () => (agent?.log().includes('metrics and probes listening') ? true : undefined), {
        seen: () => agent?.log().split('\n').slice(-10).join('\n') ?? '',
      });
      const first = await scrape(url);
      assert.equal(sample(first, 'inplace_imageprewarm_nodes', { imageprewarm: prewarm }), 0);
      await custom.createClusterCustomObject({
        ...G,
        plural: 'imageprewarms',
        body: { apiVersion: `${G.group}/${G.version}`, kind: 'ImagePrewarm', metadata: { name: prewarm }, spec: { images: [env.sandbox.images.appV1], nodeSelector: { [label]: run } } },
      });
      const state = (t: string, s: string) => sample(t, 'inplace_imageprewarm_nodes', { imageprewarm: prewarm, state: s });
      const t = await until(
        `${prewarm}: 1 node succeeded`,
        60_000,
        async () => ((x) => (state(x, 'succeeded') === 1 ? x : undefined))(await scrape(url)),
        { everyMs: 250, seen: () => agent?.log().split('\n').slice(-10).join('\n') ?? '' },
      );
      for (const s of ['failed', 'pulling', 'waiting']) assert.equal(state(t, s), 0, s);
      assert.ok(sample(t, 'inplace_kube_api_requests_total', { verb: 'list' }) >= 1, 'lists were counted');

      await custom.deleteClusterCustomObject({ ...G, plural: 'imageprewarms', name: prewarm });
      await until(`${prewarm}'s series to go`, 30_000, async () => ((x) => (!x.includes(`imageprewarm="${prewarm}"`) ? true : undefined))(await scrape(url)));
    });
  });
});
