// An InPlaceRollout grants nothing beyond its requester's rights, on the project's real cluster with the agents as
// the DaemonSet of deploy/ (its ServiceAccount and roles, scripts/kube-deploy-agent). Users are ServiceAccounts
// with exactly the rights each case gives them. With deploy/'s admission policies in force, the rollout records
// its creator and the ContainerRestart the coordinator creates carries that user, not the agent. Then the
// policies' bindings are narrowed to leave this test's namespace out (as on a cluster without them, where the
// requester is whatever the client wrote) and the coordinator's own SubjectAccessReviews refuse: a user who may
// only create InPlaceRollouts, one who may also patch the StatefulSet but not its pods, and a rollout that records
// no requester. Each ends Failed with reason Forbidden, naming the user and the permission, with no
// ContainerRestart and the pod as it was; so does a held Deployment whose requester may not patch it (the hold's
// release refused). At admission, a rollout of a Deployment or DaemonSet needs patch on it. The shipped bindings
// are put back afterwards.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/controllers/container-restart/types.js';
import type { Requester } from '../../src/k8s/requester.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, ROLLOUT_LABEL, type InPlaceRollout, type InPlaceRolloutSpec } from '../../src/controllers/rollout/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { applyCrds } from '../support/kube-apply.js';
import { applyCrd, createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { agentKubeconfig } from '../support/kube-shipped-rbac.js';
import { applyDeployFiles, deleteClusterRules, deployObjects, failure, POLICY_FILES, until, userWithRules, type TestUser } from '../support/kube-users.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';
import { requireRuntime } from '../support/require-runtime.js';
import { gatedTemplate } from '../support/rollout-cluster.js';
import { AGENT_NS, agentOnEveryNode, rolloutSettled } from '../support/rollout-wait.js';

const run = promisify(execFile);
const env = kubeEnv();
const V1 = env.sandbox.images.appV1;
const V2 = env.sandbox.images.appV2;
const IPR = { group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL };
const IPR_RULE = (verbs: string[]): k8s.V1PolicyRule => ({ apiGroups: [IPR_GROUP], resources: [IPR_PLURAL], verbs });
const STS_RULE = (verbs: string[]): k8s.V1PolicyRule => ({ apiGroups: ['apps'], resources: ['statefulsets'], verbs });
const POD_RULE = (verbs: string[]): k8s.V1PolicyRule => ({ apiGroups: [''], resources: ['pods'], verbs });
const DEPLOY_DS_RULE = (verbs: string[]): k8s.V1PolicyRule => ({ apiGroups: ['apps'], resources: ['deployments', 'daemonsets'], verbs });
/** The bindings that, narrowed, leave this test's namespace without the policies. */
const BINDINGS = [
  { file: 'admission-requester.yaml', kind: 'MutatingAdmissionPolicyBinding', name: 'inplace-agent-requester' },
  { file: 'admission-policy.yaml', kind: 'ValidatingAdmissionPolicyBinding', name: 'inplace-agent-inplacerollout' },
];

const isReady = (p: k8s.V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** What a refused rollout must leave as it was: the pod, its images, its running containers. */
function podState(p: k8s.V1Pod): string {
  return JSON.stringify({
    uid: p.metadata?.uid,
    images: p.spec?.containers.map((c) => `${c.name}=${c.image}`),
    running: (p.status?.containerStatuses ?? []).map((s) => `${s.name}:${s.containerID}:${s.restartCount}`).sort(),
    revision: p.metadata?.labels?.['controller-revision-hash'],
  });
}

describe("InPlaceRollout and its requester's rights (the DaemonSet's agents, real cluster)", function () {
  this.timeout(300_000);
  const admin = new k8s.KubeConfig();
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  let custom: k8s.CustomObjectsApi;
  let ns = '';
  const users: Record<string, TestUser> = {};
  let narrowed = false;

  const kubectl = async (...args: string[]) => (await run(path.join(env.binDir, 'kubectl'), ['--kubeconfig', env.kubeconfig, '-n', ns, ...args])).stdout;
  const readPod = () => core.readNamespacedPod({ name: 'web-0', namespace: ns });
  const restartsOf = async (uid: string) =>
    ((await custom.listNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, labelSelector: `${ROLLOUT_LABEL}=${uid}` })) as { items: ContainerRestart[] }).items;
  const stsRevision = async () => (await apps.readNamespacedStatefulSet({ name: 'web', namespace: ns })).status?.updateRevision ?? '';
  /** The user as the API server authenticates a ServiceAccount's token, written by hand (no mutating policy here). */
  const identity = (u: TestUser): Requester => ({ username: u.username, groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'] });
  const spec = (requester?: Requester): InPlaceRolloutSpec => ({
    targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' },
    prewarm: false,
    strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 },
    ...(requester ? { requester } : {}),
  });
  /** Creates the rollout as kc; the created object, or the API server's refusal. */
  async function createAs(kc: k8s.KubeConfig, name: string, s: InPlaceRolloutSpec, dryRun = false): Promise<InPlaceRollout | { code: number; message: string }> {
    try {
      const body = { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name }, spec: s };
      return (await kc.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({ ...IPR, namespace: ns, body, dryRun: dryRun ? 'All' : undefined })) as InPlaceRollout;
    } catch (err) {
      return failure(err);
    }
  }
  const created = (r: InPlaceRollout | { code: number; message: string }): InPlaceRollout => {
    if ('code' in r) throw new Error(`refused: ${r.code} ${r.message}`);
    return r;
  };

  /** The rollout's status once the coordinator has seen its generation and the workload's revision, in one of the phases. */
  const settled = (name: string, phases: string[]) => rolloutSettled(admin, ns, name, phases, stsRevision, 120_000);

  const deleteRollout = (name: string) => custom.deleteNamespacedCustomObject({ ...IPR, namespace: ns, name }).catch(() => undefined);

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet ${AGENT_NS}/inplace-agent Ready on every node (scripts/kube-deploy-agent)`, async () => {
      admin.loadFromFile(env.kubeconfig);
      core = admin.makeApiClient(k8s.CoreV1Api);
      apps = admin.makeApiClient(k8s.AppsV1Api);
      custom = admin.makeApiClient(k8s.CustomObjectsApi);
      await agentOnEveryNode(admin);
    });
    // This checkout's CRDs and policies (other suites may have applied older ones to the shared cluster).
    await applyCrd(admin);
    await applyCrds(admin, ['inplacerollout.yaml']);
    await applyDeployFiles(admin, POLICY_FILES);
    ns = await createNamespace(admin, 'ipr-access');
    users.deployer = await userWithRules(admin, ns, 'deployer', [IPR_RULE(['create', 'get', 'delete']), STS_RULE(['get', 'patch']), POD_RULE(['get', 'patch'])]);
    users.rolloutOnly = await userWithRules(admin, ns, 'rollout-only', [IPR_RULE(['create', 'get'])]);
    users.stsPatcher = await userWithRules(admin, ns, 'sts-patcher', [IPR_RULE(['create', 'get']), STS_RULE(['get', 'patch'])]);
    users.workloadPatcher = await userWithRules(admin, ns, 'workload-patcher', [IPR_RULE(['create', 'get']), DEPLOY_DS_RULE(['get', 'patch'])]);
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 1,
          serviceName: 'web',
          updateStrategy: { type: 'OnDelete' },
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: {
              nodeSelector: { 'kubernetes.io/hostname': env.nodeName },
              terminationGracePeriodSeconds: 5,
              containers: [{ name: 'app', image: V1, args: ['sh', '-c', TRAP_TERM_APP] }],
            },
          },
        },
      },
    });
    await until('pod web-0 Ready', 120_000, async () => {
      const p = await readPod().catch(() => undefined);
      return p && isReady(p) ? true : undefined;
    });
  });

  after(async () => {
    // The shipped bindings again, for every other namespace's sake.
    if (narrowed) await applyDeployFiles(admin, POLICY_FILES);
    if (ns) {
      await deleteClusterRules(admin, ns);
      await deleteNamespace(admin, ns);
    }
  });

  it("with the policies in force: the rollout records its creator, and its ContainerRestart carries that user, not the agent's ServiceAccount", async () => {
    const deployer = users.deployer;
    // This checkout's mutating policy records the requester of an InPlaceRollout (policies take a moment to load).
    await until('the requester recorded on an InPlaceRollout at admission', 60_000, async () => {
      const r = await createAs(deployer.kc, 'probe', spec(), true);
      return 'code' in r ? undefined : r.spec.requester?.username === deployer.username ? true : undefined;
    });
    const r = created(await createAs(deployer.kc, 'web', spec()));
    assert.equal(r.spec.requester?.username, deployer.username, 'written at admission');
    await kubectl('set', 'image', 'statefulset/web', `app=${V2}`);
    const done = await settled('web', ['Succeeded']);
    const crs = await restartsOf(done.metadata.uid ?? '');
    assert.equal(crs.length, 1, JSON.stringify(crs.map((c) => c.metadata.name)));
    assert.equal(crs[0].spec.requester?.username, deployer.username, "the ContainerRestart is the rollout's requester's, so the node's agent checks that user");
    const p = await readPod();
    assert.equal(p.spec?.containers[0].image, V2);
    await deleteRollout('web');
  });

  it('with the policies in force: a rollout of a Deployment or a DaemonSet needs patch on it at admission', async () => {
    for (const kind of ['Deployment', 'DaemonSet'] as const) {
      const s = { ...spec(), targetRef: { apiVersion: 'apps/v1', kind, name: 'api' } };
      const refused = await createAs(users.stsPatcher.kc, 'probe', s, true);
      assert.ok('code' in refused, `${kind}: refused`);
      assert.equal(refused.code, 403);
      assert.match(refused.message, new RegExp(`an InPlaceRollout needs patch on ${kind.toLowerCase()}s\\.apps/api in namespace ${ns}, which user ${users.stsPatcher.username} may not do`));
      assert.ok(!('code' in (await createAs(users.workloadPatcher.kc, 'probe', s, true))), `${kind}: admitted for a user who may patch it`);
    }
  });

  it("the agent's ServiceAccount may record a rollout's requester on what it creates; the policies keep it", async () => {
    const agent = new k8s.KubeConfig();
    agent.loadFromFile(await agentKubeconfig(admin));
    const body = { apiVersion: `${CR_GROUP}/${CR_VERSION}`, kind: 'ContainerRestart', metadata: { name: 'as-agent' }, spec: { podName: 'web-0', containers: [{ name: 'app' }], requester: identity(users.deployer) } };
    const cr = (await agent.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, body, dryRun: 'All' })) as ContainerRestart;
    assert.equal(cr.spec.requester?.username, users.deployer.username);
  });

  describe('with the policies left out of this namespace (the requester as the client wrote it)', () => {
    let untouched = '';

    before(async () => {
      // Narrowed, not removed: every other namespace keeps the policies while this runs.
      for (const b of BINDINGS) {
        const o = deployObjects(b.file).find((x) => x.kind === b.kind && x.metadata?.name === b.name) as k8s.KubernetesObject & { spec: Record<string, unknown> };
        o.spec.matchResources = { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [ns] }] } };
        narrowed = true;
        const objects = admin.makeApiClient(k8s.KubernetesObjectApi);
        const cur = await objects.read({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: b.name } });
        await objects.replace({ ...o, metadata: { ...o.metadata, resourceVersion: cur.metadata?.resourceVersion } });
      }
      // Out of the way once a user without patch on the workload may create a rollout, and a requester written by
      // admin for someone else stays as written.
      await until('the policies out of this namespace', 60_000, async () => {
        const weak = await createAs(users.rolloutOnly.kc, 'probe', spec(identity(users.rolloutOnly)), true);
        const other = await createAs(admin, 'probe', spec(identity(users.rolloutOnly)), true);
        return !('code' in weak) && !('code' in other) && other.spec.requester?.username === users.rolloutOnly.username ? true : undefined;
      });
      // A new revision for every case below to roll out (none will).
      const now = (await apps.readNamespacedStatefulSet({ name: 'web', namespace: ns })).spec?.template.spec?.containers[0].image;
      await kubectl('set', 'image', 'statefulset/web', `app=${now === V1 ? V2 : V1}`);
      await until('the new revision', 30_000, async () => ((await readPod()).metadata?.labels?.['controller-revision-hash'] !== (await stsRevision()) ? true : undefined));
      untouched = podState(await readPod());
    });

    const refused = async (name: string, kc: k8s.KubeConfig, requester: Requester | undefined, message: RegExp) => {
      const r = created(await createAs(kc, name, spec(requester)));
      try {
        assert.deepEqual(r.spec.requester, requester, 'the requester as the client wrote it');
        const done = await settled(name, ['Failed']);
        for (const type of ['Progressing', 'Complete']) {
          const c = done.status?.conditions?.find((x) => x.type === type);
          assert.equal(c?.reason, 'Forbidden', JSON.stringify(done.status));
          assert.match(c?.message ?? '', message);
        }
        assert.match(done.status?.message ?? '', /nothing was touched$/);
        assert.deepEqual(await restartsOf(done.metadata.uid ?? ''), [], 'no ContainerRestart');
        assert.equal(podState(await readPod()), untouched, 'the pod as it was');
      } finally {
        await deleteRollout(name);
      }
    };

    it('a user who may only create InPlaceRollouts: refused, naming the user and patch on the StatefulSet', async () => {
      const u = users.rolloutOnly;
      await refused('only', u.kc, identity(u), new RegExp(`its creator ${u.username} may not patch statefulsets\\.apps/web in namespace ${ns}, which it needs to roll out StatefulSet web`));
    });

    it('a user who may patch the StatefulSet but not its pods: refused, naming patch on the pod', async () => {
      const u = users.stsPatcher;
      await refused('sts-only', u.kc, identity(u), new RegExp(`its creator ${u.username} may not patch pods/web-0 in namespace ${ns}, which it needs to change the image of app of pod web-0`));
    });

    it("a held Deployment whose requester may not patch it: the hold's release refused, Failed with reason Forbidden naming patch on the Deployment; nothing touched", async () => {
      await apps.createNamespacedDeployment({ namespace: ns, body: { metadata: { name: 'api' }, spec: { replicas: 1, selector: { matchLabels: { app: 'api' } }, template: gatedTemplate('api') } } });
      await kubectl('rollout', 'status', 'deployment/api', '--timeout=120s');
      const pods = async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=api' })).items.map((p) => podState(p));
      const before = await pods();
      const u = users.rolloutOnly;
      created(await createAs(u.kc, 'api', { ...spec(identity(u)), targetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'api' } }));
      try {
        // Beyond images: to be handed over, which only a release of the hold (a patch of the Deployment) does. Once
        // the hold knows the rollout (a server dry run is paused).
        const change = ['set', 'env', 'deployment/api', 'MODE=two'];
        await until('the hold in force for Deployment api', 30_000, async () => (/"paused": true/.test(await kubectl(...change, '--dry-run=server', '-o', 'json')) ? true : undefined));
        await kubectl(...change);
        let last = '';
        const r = await until('the rollout Forbidden', 120_000, async () => {
          const x = (await custom.getNamespacedCustomObject({ ...IPR, namespace: ns, name: 'api' })) as InPlaceRollout;
          last = JSON.stringify(x.status);
          return x.status?.conditions?.find((c) => c.type === 'Progressing')?.reason === 'Forbidden' ? x : undefined;
        }, () => last);
        assert.equal(r.status?.phase, 'Failed');
        assert.match(r.status?.message ?? '', new RegExp(`its creator ${u.username} may not patch deployments\\.apps/api in namespace ${ns}, which it needs to roll out Deployment api`));
        const d = await apps.readNamespacedDeployment({ namespace: ns, name: 'api' });
        assert.equal(d.spec?.paused, true, 'still held: not released for that user');
        assert.deepEqual(await pods(), before, 'the pod as it was');
        assert.equal((await apps.listNamespacedReplicaSet({ namespace: ns, labelSelector: 'app=api' })).items.length, 1, 'no new ReplicaSet');
      } finally {
        await deleteRollout('api');
      }
    });

    it('no requester recorded: refused, saying how to record one', async () => {
      await refused('nobody', admin, undefined, /records no requester \(spec\.requester\).*deploy\/admission-requester\.yaml/);
    });
  });
});
