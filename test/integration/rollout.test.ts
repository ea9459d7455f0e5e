// InPlaceRollouts carried out by the agents as users install them: the DaemonSet of deploy/ (its ServiceAccount
// and roles, scripts/kube-deploy-agent), one agent per node, on the project's real cluster (every node of it;
// CI runs three). The test starts no agent of its own. It changes the workload's template as a user does
// (kubectl set image, kubectl rollout undo) and reads every outcome back from the API server: the pods' UIDs,
// IPs and container IDs, the StatefulSet's own updatedReplicas, the rollout's status, and the order in which
// the ContainerRestarts appeared. Unready pods are sampled through a watch during each rollout. The last case
// installs the optional fleet RBAC of deploy/ as a user would (removed again after, unless it was there), for
// the pre-warm, and counts the requests of two clients through a Service across a whole rollout. (On a shared
// cluster, a test that removes that RBAC meanwhile leaves the pre-warm without its nodes' records.)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { AppsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions, Watch, type V1Container, type V1Pod, type V1PodSpec } from '@kubernetes/client-node';
import { apiStatusCode } from '../../src/k8s/api-error.js';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, NODE_PREWARM_PLURAL, type ImagePrewarm, type NodePrewarm, type NodePrewarmEntry } from '../../src/controllers/image-prewarm/types.js';
import { prewarmName } from '../../src/controllers/rollout/plan.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, ROLLOUT_LABEL, type InPlaceRollout, type InPlaceRolloutSpec } from '../../src/controllers/rollout/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { until } from '../support/kube-users.js';
import { agentOnEveryNode, rolloutSettled } from '../support/rollout-wait.js';
import { holdFleetRbac, type FleetRbacHold } from '../support/fleet-rbac-hold.js';
import { retag } from '../support/registry-retag.js';
import { requireRuntime } from '../support/require-runtime.js';
import { agentImage, createService, serverContainer, waitReadyEndpoints } from '../support/traffic-fixture.js';
import { waitForRules } from '../support/traffic-trace.js';
import { describeTallies, failedOf, keepAliveClient, newConnectionClient, waitServing, withTraffic, type Tally } from '../support/traffic.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CTL = path.join(root, 'dist/src/cli/main.js');
const env = kubeEnv();
const AGENT_NS = 'inplace-system';
const SIBLINGS = ['sidecar', 'logger'];
const REPLICAS = 6;
/** Exits 0 on SIGTERM. */
const APP = `trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`;
const V1 = env.sandbox.images.appV1;
const V2 = env.sandbox.images.appV2;

const isReady = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const cid = (p: V1Pod, c: string) => p.status?.containerStatuses?.find((s) => s.name === c)?.containerID ?? '';
const image = (p: V1Pod, c: string) => p.spec?.containers.find((x) => x.name === c)?.image;

describe("InPlaceRollout carried out by the DaemonSet's agents (real cluster)", function () {
  this.timeout(900_000);
  const kc = new KubeConfig();
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let custom: CustomObjectsApi;
  let ns = '';
  let nodes: string[] = [];
  let last = '';
  /** What this test installed of deploy/optional/fleet-prewarm-rbac.yaml (nothing when it was there): removed after. */
  let fleetRbac: FleetRbacHold | undefined;

  const kubectl = async (...args: string[]) => (await run(path.join(env.binDir, 'kubectl'), ['--kubeconfig', env.kubeconfig, '-n', ns, ...args])).stdout;
  const ctl = (...args: string[]) => run(process.execPath, [CTL, '--kubeconfig', env.kubeconfig, ...args]).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
  );
  const pods = async (app: string) => (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${app}` })).items.filter((p) => !p.metadata?.deletionTimestamp);
  const rollout = async (name: string) => (await custom.getNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, name })) as InPlaceRollout;
  const restarts = async () => ((await custom.listNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns })) as { items: ContainerRestart[] }).items;
  const createRollout = (name: string, spec: Partial<InPlaceRolloutSpec> & Pick<InPlaceRolloutSpec, 'targetRef'>) =>
    custom.createNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name }, spec } });
  const patchRollout = (name: string, spec: Partial<InPlaceRolloutSpec>) =>
    custom.patchNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, name, body: { spec } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  const stsRevision = async (name: string) => (await apps.readNamespacedStatefulSet({ name, namespace: ns })).status?.updateRevision ?? '';

  /** The rollout's status once it has seen the workload's current revision and reached one of the phases. */
  const settled = (name: string, phases: string[], revision?: () => Promise<string>, ms?: number) => rolloutSettled(kc, ns, name, phases, revision, ms);

  /** Follows the pods of app and the ContainerRestarts of the namespace: the most pods unready at once, and the order of updates. */
  async function sample(app: string, expected: number) {
    // The pods as they are now, then every change after that list (a watch without a resourceVersion would
    // begin with one ADDED per pod, and the first of them would look like five pods missing).
    const list = await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${app}` });
    const ready = new Map<string, boolean>(list.items.map((p) => [p.metadata?.name ?? '', isReady(p) && !p.metadata?.deletionTimestamp]));
    let maxUnready = 0;
    const order: string[] = [];
    const pw = await new Watch(kc).watch(
      `/api/v1/namespaces/${ns}/pods`,
      { labelSelector: `app=${app}`, resourceVersion: list.metadata?.resourceVersion },
      (type, p: V1Pod) => {
        const n = p.metadata?.name ?? '';
        if (type === 'DELETED') ready.delete(n);
        else ready.set(n, isReady(p) && !p.metadata?.deletionTimestamp);
        const unready = [...ready.values()].filter((r) => !r).length + Math.max(0, expected - ready.size);
        maxUnready = Math.max(maxUnready, unready);
      },
      () => undefined,
    );
    const crList = (await custom.listNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns })) as { metadata?: { resourceVersion?: string } };
    const cw = await new Watch(kc).watch(`/apis/${CR_GROUP}/${CR_VERSION}/namespaces/${ns}/${CR_PLURAL}`, { resourceVersion: crList.metadata?.resourceVersion }, (type, cr: ContainerRestart) => {
      if (type === 'ADDED' && !order.includes(cr.metadata.name ?? '')) order.push(cr.metadata.name ?? '');
    }, () => undefined);
    return {
      maxUnready: () => maxUnready,
      /** The pods of the ContainerRestarts created since the sampling started, in order. */
      order: async () => {
        const byName = new Map((await restarts()).map((c) => [c.metadata.name ?? '', c.spec.podName]));
        return order.map((n) => byName.get(n) ?? n);
      },
      stop: () => {
        pw.abort();
        cw.abort();
      },
    };
  }

  /** An OnDelete StatefulSet spread over the nodes, its pods gated by the agent's readiness condition; extra adds to the pod spec. */
  const statefulSet = (name: string, replicas: number, containers: V1Container[], extra: Partial<V1PodSpec> = {}) => ({
    metadata: { name, labels: { app: name } },
    spec: {
      replicas,
      serviceName: name,
      podManagementPolicy: 'Parallel',
      updateStrategy: { type: 'OnDelete' },
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: 5,
          // The agent drains through this condition: a pod being updated reads not Ready.
          readinessGates: [{ conditionType: READY_CONDITION }],
          // Spread over the nodes as a real StatefulSet would be.
          topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { app: name } } }],
          ...extra,
          containers,
        },
      },
    },
  });
  const appContainers = () => ['app', ...SIBLINGS].map((c) => ({ name: c, image: V1, args: ['sh', '-c', APP] }));

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet ${AGENT_NS}/inplace-agent Ready on every node, with the InPlaceRollout CRD (scripts/kube-deploy-agent)`, async () => {
      kc.loadFromFile(env.kubeconfig);
      core = kc.makeApiClient(CoreV1Api);
      apps = kc.makeApiClient(AppsV1Api);
      custom = kc.makeApiClient(CustomObjectsApi);
      nodes = await agentOnEveryNode(kc);
      await custom.listClusterCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL });
    });
    ns = await createNamespace(kc, 'ipr');
    await apps.createNamespacedStatefulSet({ namespace: ns, body: statefulSet('web', REPLICAS, appContainers()) });
    await until(`${REPLICAS} pods of web Ready`, 180_000, async () => ((await pods('web')).filter(isReady).length === REPLICAS ? true : undefined));
    // Pre-warm is covered by its own test; here the rollouts go straight to the pods.
    await createRollout('web', { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' }, maxUnavailable: 1, prewarm: false, strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } });
    await settled('web', ['Succeeded'], () => stsRevision('web'));
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
    // Let go of the optional grants (get on Secrets among them): removed when no other run holds them, if runs installed them.
    await fleetRbac?.release();
  });

  it('StatefulSet of 6 three-container pods: one image rolled out in place, highest ordinal first, never more than maxUnavailable unready, updatedReplicas 6', async () => {
    const before = new Map((await pods('web')).map((p) => [p.metadata?.name ?? '', p]));
    const s = await sample('web', REPLICAS);
    try {
      const old = await stsRevision('web');
      await kubectl('set', 'image', 'statefulset/web', `app=${V2}`);
      // Until the StatefulSet controller has recorded the new revision, the rollout's last Succeeded (of the old
      // one) would match: wait for the new revision first.
      const done = await settled('web', ['Succeeded'], async () => {
        const rev = await stsRevision('web');
        return rev === old ? '(the new revision not recorded yet)' : rev;
      });
      assert.equal(done.status?.updatedReplicas, REPLICAS);
      assert.deepEqual(await s.order(), ['web-5', 'web-4', 'web-3', 'web-2', 'web-1', 'web-0'], 'highest ordinal first');
      assert.ok(s.maxUnready() <= 1, `at most maxUnavailable (1) pods unready at once; saw ${s.maxUnready()}`);
    } finally {
      s.stop();
    }
    const sts = await apps.readNamespacedStatefulSet({ name: 'web', namespace: ns });
    assert.equal(sts.status?.updatedReplicas, REPLICAS, "the StatefulSet's own count");
    assert.equal(sts.metadata?.generation, sts.status?.observedGeneration);
    for (const p of await pods('web')) {
      const b = before.get(p.metadata?.name ?? '') as V1Pod;
      assert.equal(p.metadata?.uid, b.metadata?.uid, `${p.metadata?.name}: same pod`);
      assert.equal(p.status?.podIP, b.status?.podIP, `${p.metadata?.name}: same IP`);
      assert.equal(image(p, 'app'), V2);
      assert.notEqual(cid(p, 'app'), cid(b, 'app'));
      for (const c of SIBLINGS) assert.equal(cid(p, c), cid(b, c), `${p.metadata?.name}/${c}: same container`);
      assert.equal(p.metadata?.labels?.['controller-revision-hash'], sts.status?.updateRevision);
    }
    const status = await ctl('rollout', 'status', 'web', '-n', ns);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /: Succeeded/);
    assert.match(status.stdout, /6\/6 updated, 6 ready/);
  });

  it('a second InPlaceRollout on the same StatefulSet is refused in its status, naming the first, and starts nothing', async () => {
    await createRollout('web-again', { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' }, maxUnavailable: 3, prewarm: false });
    try {
      // The coordinator's decision on it: Failed at its generation, with the reason and the holder's name.
      const refused = await settled('web-again', ['Failed'], undefined, 60_000);
      const c = refused.status?.conditions?.find((x) => x.type === 'Progressing');
      assert.equal(c?.reason, 'TargetInUse', JSON.stringify(refused.status));
      assert.match(c?.message ?? '', /StatefulSet web is already rolled out by InPlaceRollout web \(/);
      const uid = refused.metadata.uid ?? '';
      assert.deepEqual((await restarts()).filter((cr) => cr.metadata.labels?.[ROLLOUT_LABEL] === uid), [], 'no ContainerRestart of the second rollout');
      const first = await rollout('web');
      assert.equal(first.status?.phase, 'Succeeded', 'the first rollout is untouched');
    } finally {
      await custom.deleteNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, name: 'web-again' });
    }
  });

  it('kubectl rollout undo takes every pod back in place', async () => {
    const before = new Map((await pods('web')).map((p) => [p.metadata?.name ?? '', p.metadata?.uid]));
    await kubectl('rollout', 'undo', 'statefulset/web');
    await settled('web', ['Succeeded'], () => stsRevision('web'));
    const sts = await apps.readNamespacedStatefulSet({ name: 'web', namespace: ns });
    assert.equal(sts.status?.updatedReplicas, REPLICAS);
    for (const p of await pods('web')) {
      assert.equal(image(p, 'app'), V1, `${p.metadata?.name} back on the old image`);
      assert.equal(p.metadata?.uid, before.get(p.metadata?.name ?? ''), `${p.metadata?.name}: same pod`);
    }
  });

  it('partition 3: ordinals 0-2 keep the old image; partition 0 then finishes them', async () => {
    await patchRollout('web', { partition: 3, maxUnavailable: 2 });
    await kubectl('set', 'image', 'statefulset/web', `app=${V2}`);
    const part = await settled('web', ['Succeeded'], () => stsRevision('web'));
    assert.match(part.status?.message ?? '', /partition 3/);
    for (const p of await pods('web')) {
      const ord = Number(p.metadata?.name?.split('-').pop());
      assert.equal(image(p, 'app'), ord >= 3 ? V2 : V1, `${p.metadata?.name}`);
    }
    assert.equal((await apps.readNamespacedStatefulSet({ name: 'web', namespace: ns })).status?.updatedReplicas, 3);
    await patchRollout('web', { partition: 0 });
    await until('all 6 updated', 240_000, async () => ((await apps.readNamespacedStatefulSet({ name: 'web', namespace: ns })).status?.updatedReplicas === REPLICAS ? true : undefined));
    await settled('web', ['Succeeded'], () => stsRevision('web'));
    for (const p of await pods('web')) assert.equal(image(p, 'app'), V2);
  });

  it('paused mid-rollout (inplacectl rollout pause): nothing new starts; resume finishes it', async () => {
    await patchRollout('web', { maxUnavailable: 1 });
    const crsBefore = (await restarts()).length;
    await kubectl('set', 'image', 'statefulset/web', `app=${V1}`);
    // The first pod under way, then pause.
    await until('the first ContainerRestart of the new revision', 60_000, async () => ((await restarts()).length > crsBefore ? true : undefined));
    const paused = await ctl('rollout', 'pause', 'web', '-n', ns);
    assert.equal(paused.code, 0, paused.stderr);
    // The coordinator's own sign that it took the pause: phase Paused, at the latest generation, nothing in flight.
    const p = await until(
      'the rollout Paused with nothing in flight',
      120_000,
      async () => {
        const r = await rollout('web');
        last = JSON.stringify(r.status);
        return r.status?.observedGeneration === r.metadata.generation && r.status?.phase === 'Paused' && (r.status.podsInFlight?.length ?? 0) === 0 ? r : undefined;
      },
      () => last,
    );
    const started = (await restarts()).length - crsBefore;
    assert.ok(started >= 1 && started < REPLICAS, `${started} pods started before the pause`);
    assert.ok((p.status?.updatedReplicas ?? 0) < REPLICAS);
    // Another full round of the coordinator while paused: still the same ContainerRestarts.
    const gen = p.metadata.generation;
    await patchRollout('web', { progressDeadlineSeconds: 601 });
    await until('the coordinator to see the new spec', 60_000, async () => ((await rollout('web')).status?.observedGeneration === (gen ?? 0) + 1 ? true : undefined));
    assert.equal((await restarts()).length - crsBefore, started, 'no pod started while paused');
    const resumed = await ctl('rollout', 'resume', 'web', '-n', ns);
    assert.equal(resumed.code, 0, resumed.stderr);
    await settled('web', ['Succeeded'], () => stsRevision('web'));
    for (const pod of await pods('web')) assert.equal(image(pod, 'app'), V1);
  });

  it('a crashing image stops the rollout at the first pod, rolled back in place, naming the pod and the exit code', async () => {
    const before = new Map((await pods('web')).map((p) => [p.metadata?.name ?? '', p.metadata?.uid]));
    const crsBefore = (await restarts()).length;
    await kubectl('set', 'image', 'statefulset/web', `app=${env.sandbox.images.crash}`);
    const failed = await settled('web', ['Failed'], () => stsRevision('web'));
    assert.equal(failed.status?.failures?.length, 1, JSON.stringify(failed.status));
    const f = failed.status?.failures?.[0];
    assert.equal(f?.pod, 'web-5');
    assert.equal(f?.container, 'app');
    assert.equal(f?.exitCode, 3, JSON.stringify(f));
    assert.match(failed.status?.message ?? '', /pod web-5 container app: .*exit code 3/);
    assert.equal((await restarts()).length - crsBefore, 1, 'no pod after the first was started');
    for (const p of await pods('web')) {
      assert.equal(image(p, 'app'), V1, `${p.metadata?.name} on the old image (web-5 rolled back)`);
      assert.equal(p.metadata?.uid, before.get(p.metadata?.name ?? ''));
    }
    const st = await ctl('rollout', 'status', 'web', '-n', ns, '--watch');
    assert.equal(st.code, 1, 'status --watch exits 1 on a failed rollout');
    assert.match(st.stdout, /failed\s+pod web-5 container app: .*\(exit code 3\)/);
    // The way back: undo, and the rollout is whole again with nothing to do.
    await kubectl('rollout', 'undo', 'statefulset/web');
    const back = await settled('web', ['Succeeded'], () => stsRevision('web'));
    assert.deepEqual(back.status?.failures ?? [], []);
  });

  it('a template change beyond images: fallback Pause names the field, Recreate then replaces the pods within the budget', async () => {
    const before = new Map((await pods('web')).map((p) => [p.metadata?.name ?? '', p.metadata?.uid]));
    await kubectl('set', 'env', 'statefulset/web', '-c', 'app', 'MODE=new');
    const paused = await settled('web', ['Paused'], () => stsRevision('web'));
    assert.match(paused.status?.message ?? '', /spec\.containers\[app\]\.env changed/);
    assert.equal(paused.status?.conditions?.find((c) => c.type === 'Progressing')?.reason, 'NotInPlace');
    for (const p of await pods('web')) assert.equal(p.metadata?.uid, before.get(p.metadata?.name ?? ''), 'nothing touched');
    const s = await sample('web', REPLICAS);
    try {
      await patchRollout('web', { fallback: 'Recreate' });
      await settled('web', ['Succeeded'], () => stsRevision('web'));
      assert.ok(s.maxUnready() <= 1, `at most 1 pod unready or missing at once; saw ${s.maxUnready()}`);
    } finally {
      s.stop();
    }
    for (const p of await pods('web')) {
      assert.notEqual(p.metadata?.uid, before.get(p.metadata?.name ?? ''), `${p.metadata?.name} recreated`);
      assert.equal(p.spec?.containers.find((c) => c.name === 'app')?.env?.find((e) => e.name === 'MODE')?.value, 'new');
    }
    // The StatefulSet's own count follows its controller's next status write.
    await until('updatedReplicas 6 on the StatefulSet', 30_000, async () => ((await apps.readNamespacedStatefulSet({ name: 'web', namespace: ns })).status?.updatedReplicas === REPLICAS ? true : undefined));
  });

  /** The DaemonSet's agent pod on a node. */
  const agentOn = async (node: string) =>
    (await core.listNamespacedPod({ namespace: AGENT_NS, labelSelector: 'app.kubernetes.io/name=inplace-agent', fieldSelector: `spec.nodeName=${node}` })).items.find((p) => !p.metadata?.deletionTimestamp);
  /** Kills a node's agent (SIGKILL: no grace, no Lease given back) and waits for its successor to be Ready. */
  const killAgent = async (node: string) => {
    const victim = await agentOn(node);
    assert.ok(victim, `an agent on ${node}`);
    await core.deleteNamespacedPod({ name: victim.metadata?.name ?? '', namespace: AGENT_NS, gracePeriodSeconds: 0 });
    return victim.metadata?.uid;
  };
  const agentsReady = () =>
    until('an agent Ready on every node again', 180_000, async () => {
      for (const n of nodes) {
        const p = await agentOn(n);
        if (!p || !isReady(p)) return undefined;
      }
      return true;
    });
  const coordinationLease = () => kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'inplace-rollouts-slot-0', namespace: AGENT_NS });
  /** The StatefulSet's update revision once it has observed its latest template: name and revision number. */
  const newRevision = () =>
    until('the StatefulSet to observe its template', 30_000, async () => {
      const sts = await apps.readNamespacedStatefulSet({ name: 'web', namespace: ns });
      if (sts.status?.observedGeneration !== sts.metadata?.generation || !sts.status?.updateRevision) return undefined;
      const cr = await apps.readNamespacedControllerRevision({ name: sts.status.updateRevision, namespace: ns });
      return { hash: sts.status.updateRevision, number: String(cr.revision) };
    });
  const ofRevision = async (rev: { hash: string; number: string }) =>
    (await restarts()).filter((c) => c.metadata.annotations?.['inplace-agent.io/rollout-revision'] === rev.hash && c.metadata.annotations?.['inplace-agent.io/rollout-revision-number'] === rev.number);

  it('the coordinating agent killed mid-rollout: another takes over within the Lease duration, and the rollout ends with each pod updated once', async () => {
    const before = new Map((await pods('web')).map((p) => [p.metadata?.name ?? '', p.metadata?.uid]));
    const s = await sample('web', REPLICAS);
    try {
      await kubectl('set', 'image', 'statefulset/web', `app=${V2}`);
      const rev = await newRevision();
      await until('the rollout under way', 60_000, async () => ((await ofRevision(rev)).length > 0 ? true : undefined));
      // The coordinator now: the Lease and its holder (absent for a moment while it changes hands, after an agent
      // gave it back on its way out).
      const lease = await until('the coordination Lease held', 30_000, async () => {
        const l = await coordinationLease().catch((err: unknown) => {
          if (apiStatusCode(err) === 404) return undefined;
          throw err;
        });
        return l?.spec?.holderIdentity ? l : undefined;
      });
      const holder = lease.spec?.holderIdentity ?? '';
      const leaseMs = (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
      const node = holder.split('/')[0];
      assert.ok(nodes.includes(node), `the Lease holder ${holder} names a node`);
      const killedAt = Date.now();
      await killAgent(node);
      // Handed over: the Lease renewed after the kill (by another node's agent, or by the restarted one).
      const renewed = await until('the Lease renewed after the kill', leaseMs + 30_000, async () => {
        const l = await coordinationLease().catch((err: unknown) => {
          if (apiStatusCode(err) === 404) return undefined; // given back on the way out, not yet taken again
          throw err;
        });
        if (!l) return undefined;
        const t = l.spec?.renewTime ? new Date(l.spec.renewTime as unknown as string).getTime() : 0;
        return t > killedAt ? { at: Date.now(), holder: l.spec?.holderIdentity } : undefined;
      });
      assert.ok(renewed.at - killedAt <= leaseMs + 2000, `handed over ${renewed.at - killedAt} ms after the kill (Lease ${leaseMs} ms), to ${renewed.holder}`);
      const done = await settled('web', ['Succeeded'], () => stsRevision('web'));
      assert.equal(done.status?.updatedReplicas, REPLICAS);
      const crs = await ofRevision(rev);
      assert.deepEqual(crs.map((c) => c.spec.podName).sort(), [...before.keys()].sort(), 'one ContainerRestart per pod for the revision');
      assert.ok(s.maxUnready() <= 1, `at most 1 pod unready at once, across the hand-over; saw ${s.maxUnready()}`);
    } finally {
      s.stop();
    }
    for (const p of await pods('web')) {
      assert.equal(p.metadata?.uid, before.get(p.metadata?.name ?? ''));
      assert.equal(image(p, 'app'), V2);
    }
    await agentsReady();
  });

  it("a node's agent killed mid-pod: the pod's update finishes when the agent is back (its journal), not run twice", async () => {
    await patchRollout('web', { strategy: { gracePeriodSeconds: 5, minReadySeconds: 8 } });
    const before = new Map((await pods('web')).map((p) => [p.metadata?.name ?? '', p.metadata?.uid]));
    await kubectl('set', 'image', 'statefulset/web', `app=${V1}`);
    const rev = await newRevision();
    // A pod under way (its new container must run for 8 s): its agent is killed there.
    const running = await until('a ContainerRestart under way on its node', 120_000, async () =>
      (await ofRevision(rev)).find((c) => c.status?.phase === 'Running' && c.status.nodeName),
    );
    const node = running.status?.nodeName ?? '';
    await killAgent(node);
    await agentsReady();
    const done = await settled('web', ['Succeeded'], () => stsRevision('web'));
    assert.deepEqual(done.status?.failures ?? [], []);
    const cr = (await ofRevision(rev)).find((c) => c.metadata.name === running.metadata.name);
    assert.equal(cr?.status?.phase, 'Succeeded', JSON.stringify(cr?.status));
    assert.equal(cr?.status?.operationId, running.status?.operationId, 'the same operation, resumed from the journal');
    for (const p of await pods('web')) {
      assert.equal(p.metadata?.uid, before.get(p.metadata?.name ?? ''));
      assert.equal(image(p, 'app'), V1);
    }
    await patchRollout('web', { strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } });
  });

  it('DaemonSet with OnDelete: one pod per node updated in place, updatedNumberScheduled reaches the node count', async () => {
    await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: 'ds' },
        spec: {
          selector: { matchLabels: { app: 'ds' } },
          updateStrategy: { type: 'OnDelete' },
          template: {
            metadata: { labels: { app: 'ds' } },
            spec: {
              terminationGracePeriodSeconds: 5,
              readinessGates: [{ conditionType: READY_CONDITION }],
              // Only the cluster's real nodes: other tests register bare Node objects that run nothing.
              affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: nodes }] }] } } },
              containers: ['app', ...SIBLINGS].map((c) => ({ name: c, image: V1, args: ['sh', '-c', APP] })) },
          },
        },
      },
    });
    await until(`a Ready ds pod on each of ${nodes.length} nodes`, 120_000, async () => ((await pods('ds')).filter(isReady).length === nodes.length ? true : undefined));
    const before = new Map((await pods('ds')).map((p) => [p.metadata?.name ?? '', p]));
    await createRollout('ds', { targetRef: { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds' }, prewarm: false, strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } });
    await settled('ds', ['Succeeded']);
    const s = await sample('ds', nodes.length);
    try {
      await kubectl('set', 'image', 'daemonset/ds', `app=${V2}`);
      const gen = async () => String((await apps.readNamespacedDaemonSet({ name: 'ds', namespace: ns })).metadata?.generation);
      await until('updatedNumberScheduled = the node count', 240_000, async () => {
        const ds = await apps.readNamespacedDaemonSet({ name: 'ds', namespace: ns });
        return ds.status?.observedGeneration === ds.metadata?.generation && ds.status?.updatedNumberScheduled === nodes.length ? true : undefined;
      });
      await settled('ds', ['Succeeded']);
      assert.ok(s.maxUnready() <= 1, `at most 1 pod unready at once; saw ${s.maxUnready()}`);
      const order = await s.order();
      const nodeOf = new Map([...before.values()].map((p) => [p.metadata?.name ?? '', p.spec?.nodeName ?? '']));
      assert.deepEqual(order.map((p) => nodeOf.get(p)), [...nodes].sort(), 'in node-name order');
      for (const p of await pods('ds')) {
        const b = before.get(p.metadata?.name ?? '') as V1Pod;
        assert.ok(b, `${p.metadata?.name} is one of the original pods`);
        assert.equal(p.metadata?.uid, b.metadata?.uid);
        assert.equal(image(p, 'app'), V2);
        assert.equal(p.metadata?.labels?.['pod-template-generation'], await gen());
        for (const c of SIBLINGS) assert.equal(cid(p, c), cid(b, c));
      }
    } finally {
      s.stop();
    }
  });

  /** Every object at path (a watch from the start: existing objects arrive as ADDED) handed to on until stopped. */
  const follow = async <T,>(url: string, query: Record<string, string>, on: (o: T) => void) => {
    const w = await new Watch(kc).watch(url, query, (_type, o: T) => on(o), () => undefined);
    return () => w.abort();
  };

  it('behind a Service, with pre-warm: every node of the pods pulls the new image before the first pod is touched, and clients see 0 failed requests through the whole rollout', async () => {
    const SRV = 'srv';
    const served = await agentImage(kc);
    // A tag no node has: each node gets it from the pre-warm's pull or from the pod's own, never from before.
    const next = await retag(env.sandbox.registry, served, `ipr-${randomBytes(4).toString('hex')}`);
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: statefulSet(SRV, nodes.length, [serverContainer(served)], {
        affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: nodes }] }] } } },
      }),
    });
    // The pre-warm's RBAC as a user installs it (removed after, unless it was there).
    fleetRbac = await holdFleetRbac(kc, 'rollout-test');
    const svc = await createService(kc, ns, SRV, SRV);
    await waitReadyEndpoints(kc, ns, SRV, nodes.length, 180_000);
    const lasting = { maxMs: 900_000, maxRequests: 1_000_000 };
    const clients = {
      newConnection: () => newConnectionClient({ host: svc.clusterIp, port: svc.port, everyMs: 20, ...lasting }),
      keepAlive: () => keepAliveClient({ host: svc.clusterIp, port: svc.port, everyMs: 10, ...lasting }, 2),
    };
    await waitForRules({ namespace: ns, name: SRV, ...svc }, nodes.length);
    await waitServing(clients);
    const before = new Map((await pods(SRV)).map((p) => [p.metadata?.name ?? '', p]));
    const podNodes = new Set([...before.values()].map((p) => p.spec?.nodeName ?? ''));
    // minReadySeconds 0 (the default): each pod's condition goes True as its new container starts, before its
    // readiness probe passes (docs/kubernetes.md, the condition at the start); no client may see it meanwhile.
    await createRollout(SRV, { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: SRV }, maxUnavailable: 1, prewarm: true, strategy: { gracePeriodSeconds: 5, minReadySeconds: 0 } });
    const uid = (await settled(SRV, ['Succeeded'], () => stsRevision(SRV))).metadata.uid ?? '';

    // The pre-warm's objects are deleted once the pods are under way: what they said is kept from watches.
    const prewarms = new Map<string, ImagePrewarm>();
    const nodeEntries = new Map<string, Map<string, NodePrewarmEntry>>();
    const stops = [
      await follow<ImagePrewarm>(`/apis/${FLEET_GROUP}/${FLEET_VERSION}/${IMAGE_PREWARM_PLURAL}`, { labelSelector: `${ROLLOUT_LABEL}=${uid}` }, (pw) => {
        if ((pw.status?.succeeded ?? 0) >= (prewarms.get(pw.metadata.name)?.status?.succeeded ?? 0)) prewarms.set(pw.metadata.name, pw);
      }),
      await follow<NodePrewarm>(`/apis/${FLEET_GROUP}/${FLEET_VERSION}/${NODE_PREWARM_PLURAL}`, {}, (np) => {
        for (const [name, e] of Object.entries(np.status?.prewarms ?? {})) {
          if (e.phase !== 'Succeeded') continue;
          const m = nodeEntries.get(name) ?? new Map<string, NodePrewarmEntry>();
          if (!m.has(np.metadata.name)) m.set(np.metadata.name, e);
          nodeEntries.set(name, m);
        }
      }),
    ];
    let target = '';
    let tallies: Record<string, Tally> = {};
    try {
      ({ tallies } = await withTraffic(clients, 2000, async () => {
        await kubectl('set', 'image', `statefulset/${SRV}`, `app=${next}`);
        return settled(SRV, ['Succeeded'], () => stsRevision(SRV), 240_000);
      }));
    } finally {
      for (const stop of stops) stop();
    }

    // The pre-warm: every node holding a pod pulled the image, and said so before any pod's update began.
    // (The update revision read now: the controller records it a moment after the template change.)
    target = await stsRevision(SRV);
    const pwName = prewarmName(uid, target);
    const pw = prewarms.get(pwName);
    assert.ok(pw, `the ImagePrewarm ${pwName} of the rollout was seen`);
    assert.deepEqual(pw.spec.images, [next]);
    // The coordinator goes on as soon as the nodes' own records say so (src/controllers/rollout/observe.ts), which may be
    // before an agent has summed them up in the ImagePrewarm's status: the records are what is checked.
    const entries = nodeEntries.get(pwName) ?? new Map<string, NodePrewarmEntry>();
    assert.deepEqual([...entries.keys()].sort(), [...podNodes].sort(), 'each node of the pods pulled in the pre-warm');
    const crs = (await restarts()).filter((c) => c.metadata.labels?.[ROLLOUT_LABEL] === uid);
    assert.equal(crs.length, before.size, 'one ContainerRestart per pod');
    const firstStart = Math.min(...crs.map((c) => Date.parse(c.status?.startTime ?? '')));
    for (const [node, e] of entries) {
      const done = Date.parse(e.images.find((i) => i.image === next)?.completionTime ?? '');
      assert.ok(done <= firstStart, `${node} had the image (${new Date(done).toISOString()}) before the first pod update began (${new Date(firstStart).toISOString()})`);
    }
    // And each pod's own update found the image on its node: no Pulling event, "already present".
    for (const name of before.keys()) {
      const evs = (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` })).items.filter((e) => e.message?.includes(next));
      assert.deepEqual(evs.filter((e) => e.reason === 'Pulling').map((e) => e.message), [], `${name}: no pull of its own`);
      assert.ok(evs.some((e) => e.reason === 'Pulled' && /already present on machine/.test(e.message ?? '')), `${name}: ${JSON.stringify(evs.map((e) => `${e.reason}: ${e.message}`))}`);
    }

    // The rollout itself: in place, every pod on the new image, and no request failed through the Service.
    for (const p of await pods(SRV)) {
      const b = before.get(p.metadata?.name ?? '') as V1Pod;
      assert.equal(p.metadata?.uid, b.metadata?.uid, `${p.metadata?.name}: same pod`);
      assert.equal(image(p, 'app'), next);
    }
    const text = describeTallies(tallies);
    console.log(`      traffic through the rollout: ${text}`);
    for (const t of Object.values(tallies)) assert.ok(t.ok > 100, `the clients got answers: ${text}`);
    assert.equal(failedOf(tallies), 0, `no failed request: ${text}`);
  });
});
