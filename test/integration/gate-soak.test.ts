// The soak of the gate opened at the first sight of the new instance (issue 29): restarts one after the other,
// alternating a same-image restart and an image change, over four gated replicas of a small HTTP server behind a
// Service, through ContainerRestart objects (min-ready 0, where the gate opens at the start) handled by the
// DaemonSet's agents, under clients through the Service: a new connection every 10 ms, and two keep-alive lanes.
// Every restart must succeed and no request may fail. INPLACE_SOAK_RESTARTS sets the count (CI: 50; the soak the
// docs cite ran 300, docs/benchmarks.md).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { KUBE_REQUEST_DEADLINE } from '../../src/k8s/request-deadline.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { AGENT_DS, daemonSetAgent } from '../support/daemonset-agent.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { retag } from '../support/registry-retag.js';
import { requireRuntime } from '../support/require-runtime.js';
import { agentImage, createService, serverPod, waitReadyEndpoints, type ServiceAddress } from '../support/traffic-fixture.js';
import { waitForRules } from '../support/traffic-trace.js';
import { describeFailures, describeTallies, failedOf, keepAliveClient, type Span, newConnectionClient, waitServing, withTraffic } from '../support/traffic.js';

const env = kubeEnv();
const REPLICAS = 4;
const RESTARTS = Number(process.env.INPLACE_SOAK_RESTARTS ?? 50);

describe(`soak: ${RESTARTS} restarts with the gate opened from the runtime, behind a Service, 0 failed requests (real cluster)`, function () {
  this.timeout(120_000 + RESTARTS * 20_000);
  const kc = new KubeConfig();
  let core: CoreV1Api;
  let crs: ContainerRestartApi;
  let ns = '';
  let images: string[] = [];
  let web: ServiceAddress;

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet inplace-system/inplace-agent on the test cluster (scripts/kube-deploy-agent)`, async () => {
      kc.loadFromFile(env.kubeconfig);
      core = kc.makeApiClient(CoreV1Api);
      await daemonSetAgent(kc);
    });
    const image = await agentImage(kc);
    images = [image, await retag(env.sandbox.registry, image, `soak-${randomBytes(3).toString('hex')}`)];
    crs = new ContainerRestartApi(kc);
    ns = await createNamespace(kc, 'ksoak');
    for (let i = 0; i < REPLICAS; i++) await core.createNamespacedPod({ namespace: ns, body: serverPod(ns, `web-${i}`, 'web', image) });
    web = await createService(kc, ns, 'web', 'web');
    await waitReadyEndpoints(kc, ns, 'web', REPLICAS);
    await waitForRules({ namespace: ns, name: 'web', ...web }, REPLICAS);
    await waitServing({ clusterIp: () => newConnectionClient({ host: web.clusterIp, port: web.port }) });
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
  });

  it('every restart succeeds, same image and image changes alternating, and no client request fails', async () => {
    // The image each pod runs now (the spec's, as the agent patches it).
    const running = new Map<string, string>(Array.from({ length: REPLICAS }, (_, i) => [`web-${i}`, images[0]]));
    let sameImage = 0;
    let changes = 0;
    const t0 = Date.now();
    const spans: Span[] = [];
    const clients = {
      newConnection: () => newConnectionClient({ host: web.clusterIp, port: web.port }),
      keepAlive: () => keepAliveClient({ host: web.clusterIp, port: web.port }, 2),
    };
    const { tallies } = await withTraffic(clients, 2000, async () => {
      for (let i = 0; i < RESTARTS; i++) {
        const pod = `web-${i % REPLICAS}`;
        const change = Math.floor(i / REPLICAS) % 2 === 1;
        const next = change ? images.find((x) => x !== running.get(pod)) : undefined;
        const name = `s${i}-${pod}`;
        const from = Date.now();
        await crs.create(containerRestart(ns, name, { podName: pod, containers: [{ name: 'app', ...(next ? { image: next } : {}) }], strategy: { minReadySeconds: 0 } }));
        const done = await waitForStatus(crs, ns, name, (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 120_000);
        assert.equal(done.status?.phase, 'Succeeded', `restart ${i} (${pod}${next ? `, to ${next}` : ', same image'}): ${JSON.stringify(done.status)}`);
        spans.push({ name: `${name}${next ? ' (image)' : ''}`, from, to: Date.now() });
        if (next) {
          running.set(pod, next);
          changes++;
        } else sameImage++;
        await waitReadyEndpoints(kc, ns, 'web', REPLICAS);
      }
    });
    const text = describeTallies(tallies);
    console.log(`      ${RESTARTS} restarts (${sameImage} same image, ${changes} image changes); traffic: ${text}`);
    for (const line of describeFailures(tallies, spans, t0)) console.log(`      failed: ${line}`);
    assert.ok(sameImage > 0 && changes > 0, 'both kinds of restart ran');
    for (const t of Object.values(tallies)) assert.ok(t.ok > RESTARTS * 10, `the clients got answers: ${text}`);
    assert.equal(failedOf(tallies), 0, `no failed request: ${text}`);
    // No API request of the agents ran out of its deadline (--kube-request-timeout): each was answered in time,
    // and an answered one is never reported as aborted.
    const sinceSeconds = Math.ceil((Date.now() - t0) / 1000) + 5;
    const agents = await core.listNamespacedPod({ namespace: AGENT_DS.namespace, labelSelector: 'app.kubernetes.io/name=inplace-agent' });
    assert.ok(agents.items.length > 0, 'the agents were found');
    let logged = 0;
    for (const p of agents.items) {
      const log = await core.readNamespacedPodLog({ namespace: AGENT_DS.namespace, name: p.metadata?.name ?? '', container: 'agent', sinceSeconds });
      logged += log.length;
      const aborted = log.split('\n').filter((l) => l.includes(KUBE_REQUEST_DEADLINE));
      assert.deepEqual(aborted, [], `${p.spec?.nodeName}'s agent logged aborted API requests`);
    }
    assert.ok(logged > 0, 'the agents\' logs of the soak were read');
  });
});
