// A Deployment rolled out in place by the DaemonSet's agents, with the stock verbs: deploy/ as
// scripts/kube-deploy-agent installs it (the hold policy among it), a Deployment of HTTP servers behind a Service,
// and a two-line InPlaceRollout beside it. `kubectl set image` and `kubectl rollout restart`, each followed by
// `kubectl rollout status`, must keep every pod (UID, IP), leave one ReplicaSet, unpause the Deployment, and
// fail no request of two clients through the Service.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION } from '../../src/rollout/types.js';
import { DEPLOYMENT_HOLD_ANNOTATION } from '../../src/rollout/workloads/hold.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { until } from '../support/kube-users.js';
import { agentOnEveryNode, AGENT_NS } from '../support/rollout-wait.js';
import { retag } from '../support/registry-retag.js';
import { requireRuntime } from '../support/require-runtime.js';
import { agentImage, createService, serverContainer, waitReadyEndpoints } from '../support/traffic-fixture.js';
import { describeTallies, failedOf, keepAliveClient, newConnectionClient, waitServing, withTraffic } from '../support/traffic.js';

const run = promisify(execFile);
const env = kubeEnv();
const NAME = 'web';
const REPLICAS = 3;

describe("A Deployment rolled out in place by the DaemonSet's agents, with kubectl's own verbs (real cluster)", function () {
  this.timeout(900_000);
  const kc = new KubeConfig();
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let ns = '';
  let served = '';
  let clients: Parameters<typeof withTraffic>[0] = {};
  const kubectl = async (...args: string[]) => (await run(path.join(env.binDir, 'kubectl'), ['--kubeconfig', env.kubeconfig, '-n', ns, ...args])).stdout;
  const pods = async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${NAME}` })).items.filter((p) => !p.metadata?.deletionTimestamp);
  const replicaSets = async () => (await apps.listNamespacedReplicaSet({ namespace: ns, labelSelector: `app=${NAME}` })).items;
  const cid = (p: V1Pod) => p.status?.containerStatuses?.find((s) => s.name === 'app')?.containerID ?? '';

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet ${AGENT_NS}/inplace-agent Ready on every node, with deploy/workload-hold-policy.yaml (scripts/kube-deploy-agent)`, async () => {
      kc.loadFromFile(env.kubeconfig);
      apps = kc.makeApiClient(AppsV1Api);
      core = kc.makeApiClient(CoreV1Api);
      await agentOnEveryNode(kc);
      await kc.makeApiClient(CustomObjectsApi).listClusterCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL });
    });
    ns = await createNamespace(kc, 'iprd');
    served = await agentImage(kc);
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: NAME },
        spec: {
          replicas: REPLICAS,
          selector: { matchLabels: { app: NAME } },
          template: {
            metadata: { labels: { app: NAME } },
            spec: {
              terminationGracePeriodSeconds: 5,
              // The agent drains through this condition: a pod being updated reads not Ready.
              readinessGates: [{ conditionType: READY_CONDITION }],
              topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { app: NAME } } }],
              containers: [serverContainer(served)],
            },
          },
        },
      },
    });
    const svc = await createService(kc, ns, NAME, NAME);
    // The rollout object as a user writes it: the target, and no pre-warm (deploy/optional's RBAC is not assumed).
    await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: IPR_GROUP,
      version: IPR_VERSION,
      plural: IPR_PLURAL,
      namespace: ns,
      body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name: NAME }, spec: { targetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: NAME }, prewarm: false } },
    });
    await waitReadyEndpoints(kc, ns, NAME, REPLICAS, 180_000);
    const lasting = { maxMs: 900_000, maxRequests: 1_000_000 };
    clients = {
      newConnection: () => newConnectionClient({ host: svc.clusterIp, port: svc.port, everyMs: 20, ...lasting }),
      keepAlive: () => keepAliveClient({ host: svc.clusterIp, port: svc.port, everyMs: 10, ...lasting }, 2),
    };
    await waitServing(clients);
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
  });

  /** Runs the kubectl verb and `kubectl rollout status` under traffic; checks what every verb must keep. */
  async function inPlace(verb: string[]): Promise<Map<string, V1Pod>> {
    const before = new Map((await pods()).map((p) => [p.metadata?.name ?? '', p]));
    assert.equal(before.size, REPLICAS);
    const { tallies } = await withTraffic(clients, 2000, async () => {
      await kubectl(...verb);
      // Exit 0, or the call throws.
      return kubectl('rollout', 'status', `deployment/${NAME}`, '--timeout=300s');
    });
    const after = await pods();
    assert.deepEqual(after.map((p) => p.metadata?.uid).sort(), [...before.values()].map((p) => p.metadata?.uid).sort(), 'the same pods');
    for (const p of after) assert.equal(p.status?.podIP, before.get(p.metadata?.name ?? '')?.status?.podIP, `${p.metadata?.name}: same IP`);
    const rss = await replicaSets();
    assert.equal(rss.length, 1, `one ReplicaSet: ${rss.map((r) => r.metadata?.name).join(', ')}`);
    const d = await until('the Deployment released', 60_000, async () => {
      const x = await apps.readNamespacedDeployment({ namespace: ns, name: NAME });
      return x.spec?.paused !== true ? x : undefined;
    });
    assert.equal(d.metadata?.annotations?.[DEPLOYMENT_HOLD_ANNOTATION], undefined, 'the hold annotation removed');
    assert.equal(d.status?.updatedReplicas, REPLICAS, "the Deployment's own count");
    const text = describeTallies(tallies);
    console.log(`      traffic: ${text}`);
    for (const t of Object.values(tallies)) assert.ok(t.ok > 50, `the clients got answers: ${text}`);
    assert.equal(failedOf(tallies), 0, `no failed request: ${text}`);
    return before;
  }

  it('kubectl set image, then kubectl rollout status exits 0: the same pods on the new image, one ReplicaSet, unpaused, 0 failed requests', async () => {
    const next = await retag(env.sandbox.registry, served, `iprd-${randomBytes(4).toString('hex')}`);
    const before = await inPlace(['set', 'image', `deployment/${NAME}`, `app=${next}`]);
    for (const p of await pods()) {
      assert.equal(p.spec?.containers[0].image, next);
      assert.notEqual(cid(p), cid(before.get(p.metadata?.name ?? '') as V1Pod), `${p.metadata?.name}: a new container`);
    }
    const [rs] = await replicaSets();
    assert.equal(rs.spec?.template?.spec?.containers[0].image, next, "the ReplicaSet's template carries the new image");
  });

  it('kubectl rollout restart: every container restarted in place, the same pods, 0 failed requests', async () => {
    const before = await inPlace(['rollout', 'restart', `deployment/${NAME}`]);
    for (const p of await pods()) {
      assert.notEqual(cid(p), cid(before.get(p.metadata?.name ?? '') as V1Pod), `${p.metadata?.name}: a new container`);
      assert.ok(p.metadata?.annotations?.['kubectl.kubernetes.io/restartedAt'], `${p.metadata?.name}: the template's annotation`);
    }
  });
});
