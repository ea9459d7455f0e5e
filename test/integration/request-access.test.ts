// A request object grants nothing beyond what its creator could do directly (issue 15), on the real cluster with
// the agent as users install it (the DaemonSet of deploy/, its ServiceAccount and roles) and deploy/'s admission
// policies. ServiceAccounts hold exactly the rights each case names. With the policies removed, the agent's own
// SubjectAccessReview refuses the same requests (status reason Forbidden); the pod is never touched by a refused
// request. The fleet agents' check runs in-process with a token of a ServiceAccount holding deploy/'s fleet roles.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { systemClock } from '../../src/clock.js';
import { FleetAgent, FLEET_DEFAULTS } from '../../src/controllers/image-prewarm/fleet-agent.js';
import { KubeFleetApi } from '../../src/controllers/image-prewarm/fleet-api.js';
import type { FleetPuller } from '../../src/controllers/image-prewarm/fleet-puller.js';
import type { NodePrewarm } from '../../src/controllers/image-prewarm/types.js';
import { SubjectAccessReviewer } from '../../src/k8s/access-review.js';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { applyCrds, deleteNodes, ensureNode } from '../support/kube-apply.js';
import { applyCrd, createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { applyDeployFiles, deleteClusterRules, deleteDeployFiles, deployObjects, failure, POLICY_FILES, until, userWithRules, type TestUser } from '../support/kube-users.js';
import { createWebPod } from '../support/kube-web-pod.js';
import { memoryLogger } from '../support/memory-logger.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = kubeEnv();
const AGENT_NS = 'inplace-system';
const CR_RULE = (verbs: string[]): k8s.V1PolicyRule => ({ apiGroups: [CR_GROUP], resources: [CR_PLURAL], verbs });
const POD_RULE = (verbs: string[]): k8s.V1PolicyRule => ({ apiGroups: [''], resources: ['pods'], verbs });

/** What a refused request must leave as it was: the spec's images, the running containers, their restart counts. */
function podState(p: k8s.V1Pod): string {
  return JSON.stringify({
    uid: p.metadata?.uid,
    images: p.spec?.containers.map((c) => `${c.name}=${c.image}`),
    running: (p.status?.containerStatuses ?? []).map((s) => `${s.name}:${s.containerID}:${s.restartCount}`).sort(),
  });
}

describe("request objects and their creator's rights (admission policies, the DaemonSet's agent)", function () {
  this.timeout(240_000);
  const admin = new k8s.KubeConfig();
  let core: k8s.CoreV1Api;
  let adminCrs: ContainerRestartApi;
  let ns = '';
  const users: Record<string, TestUser> = {};
  let policiesRemoved = false;
  const run = randomBytes(3).toString('hex');

  const readPod = () => core.readNamespacedPod({ name: 'web', namespace: ns });
  const isReady = (p: k8s.V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const ready = () => until('pod web Ready', 60_000, async () => ((p) => (isReady(p) ? p : undefined))(await readPod()));

  /** Creates the object as user; the API server's refusal, or undefined when it was created. */
  async function createAs(user: TestUser, cr: ContainerRestart, dryRun = false): Promise<{ code: number; message: string } | undefined> {
    const custom = user.kc.makeApiClient(k8s.CustomObjectsApi);
    try {
      await custom.createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, body: cr, dryRun: dryRun ? 'All' : undefined });
      return undefined;
    } catch (err) {
      return failure(err);
    }
  }

  /** Waits until the admission policies are in force (on) or gone (off): a dry-run request of the create-only user tells. */
  async function policiesInForce(on: boolean): Promise<void> {
    const probe = containerRestart(ns, `probe-${randomBytes(3).toString('hex')}`, { podName: 'web', containers: [{ name: 'app' }] });
    await until(`the admission policies ${on ? 'in force' : 'gone'}`, 60_000, async () => {
      const r = await createAs(users.createOnly, probe, true);
      return (r?.code === 403) === on ? true : undefined;
    });
    // The API server takes up the mutating policy (it writes spec.requester) apart from the validating one: a
    // dry-run create of a user who passes both tells whether the requester is written.
    const custom = users.patcher.kc.makeApiClient(k8s.CustomObjectsApi);
    await until(`the requester policy ${on ? 'in force' : 'gone'}`, 60_000, async () => {
      const made = (await custom.createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, body: probe, dryRun: 'All' })) as ContainerRestart;
      return (made.spec.requester !== undefined) === on ? true : undefined;
    });
  }

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet ${AGENT_NS}/inplace-agent Ready on node ${env.nodeName} (scripts/kube-deploy-agent)`, async () => {
      admin.loadFromFile(env.kubeconfig);
      core = admin.makeApiClient(k8s.CoreV1Api);
      const pods = await core.listNamespacedPod({ namespace: AGENT_NS, fieldSelector: `spec.nodeName=${env.nodeName}`, labelSelector: 'app.kubernetes.io/name=inplace-agent' });
      if (!pods.items.some((p) => !p.metadata?.deletionTimestamp && isReady(p))) throw new Error(`no Ready pod of the DaemonSet on ${env.nodeName}`);
    });
    // Exactly what deploy/ ships (scripts/kube-deploy-agent applied it; applied again in case an older run left another version).
    // This checkout's CRD, the agent's RBAC and the policies (other suites may have applied older ones to the shared cluster).
    await applyCrd(admin);
    await applyDeployFiles(admin, ['rbac.yaml', ...POLICY_FILES]);
    adminCrs = new ContainerRestartApi(admin);
    ns = await createNamespace(admin, 'kacc');
    users.createOnly = await userWithRules(admin, ns, 'create-only', [CR_RULE(['create'])]);
    users.patcher = await userWithRules(admin, ns, 'patcher', [CR_RULE(['create']), POD_RULE(['patch'])]);
    users.deleter = await userWithRules(admin, ns, 'deleter', [CR_RULE(['create']), POD_RULE(['delete'])]);
    await createWebPod(core, ns, ['app', 'side']);
    await ready();
    await policiesInForce(true);
  });

  after(async () => {
    if (policiesRemoved) await applyDeployFiles(admin, POLICY_FILES);
    if (ns) {
      await deleteClusterRules(admin, ns);
      await deleteNamespace(admin, ns);
    }
  });

  it('only `create containerrestarts`: an image change and a restart are both refused at admission, naming the permission; the pod is untouched', async () => {
    const before = podState(await ready());
    const image = await createAs(users.createOnly, containerRestart(ns, 'co-image', { podName: 'web', containers: [{ name: 'app', image: env.sandbox.images.appV2 }] }));
    assert.equal(image?.code, 403, JSON.stringify(image));
    assert.match(image.message, /ValidatingAdmissionPolicy 'inplace-agent-containerrestart'/);
    assert.match(image.message, /needs patch on pods\/web in namespace kacc-\w+, which user system:serviceaccount:kacc-\w+:create-only may not do/);
    const restart = await createAs(users.createOnly, containerRestart(ns, 'co-restart', { podName: 'web', containers: [{ name: 'app' }] }));
    assert.equal(restart?.code, 403, JSON.stringify(restart));
    assert.match(restart.message, /needs delete or patch on pods\/web/);
    assert.equal(podState(await readPod()), before, 'the pod is as it was');
  });

  it('+ `patch pods`: an image change is allowed, recorded as that user, and run by the agent', async () => {
    const before = await ready();
    const created = await new ContainerRestartApi(users.patcher.kc).create(
      containerRestart(ns, 'patch-image', { podName: 'web', containers: [{ name: 'app', image: env.sandbox.images.appV2 }], strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } }),
    );
    assert.equal(created.spec.requester?.username, users.patcher.username, 'the requester recorded at admission');
    const done = await waitForStatus(adminCrs, ns, 'patch-image', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 90_000);
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    const after = await readPod();
    assert.equal(after.spec?.containers.find((c) => c.name === 'app')?.image, env.sandbox.images.appV2);
    assert.equal(after.metadata?.uid, before.metadata?.uid, 'same pod');
  });

  it('+ `delete pods`: a restart is allowed and run; an image change is refused at admission', async () => {
    const before = await ready();
    const refused = await createAs(users.deleter, containerRestart(ns, 'del-image', { podName: 'web', containers: [{ name: 'app', image: env.sandbox.images.appV1 }] }));
    assert.equal(refused?.code, 403, JSON.stringify(refused));
    assert.match(refused.message, /needs patch on pods\/web/);
    assert.equal(podState(await readPod()), podState(before), 'the refused image change touched nothing');
    await new ContainerRestartApi(users.deleter.kc).create(containerRestart(ns, 'del-restart', { podName: 'web', containers: [{ name: 'app' }], strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } }));
    const done = await waitForStatus(adminCrs, ns, 'del-restart', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 90_000);
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    const after = await ready();
    const restarts = (p: k8s.V1Pod) => p.status?.containerStatuses?.find((s) => s.name === 'app')?.restartCount ?? 0;
    assert.equal(restarts(after), restarts(before) + 1, 'app restarted once');
  });

  it('ImagePrewarm naming a Secret its creator cannot get: refused at admission; with `get` on it, accepted', async () => {
    await applyCrds(admin, ['imageprewarm.yaml', 'nodeprewarm.yaml']);
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'regcred' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from('{"auths":{}}').toString('base64') } } });
    const pwRule: k8s.V1PolicyRule = { apiGroups: [CR_GROUP], resources: ['imageprewarms'], verbs: ['create', 'delete'] };
    const warmer = await userWithRules(admin, ns, 'warmer', [], [pwRule]);
    const reader = await userWithRules(admin, ns, 'reader', [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['regcred'], verbs: ['get'] }], [pwRule]);
    const body = (name: string) => ({ apiVersion: `${CR_GROUP}/v1alpha1`, kind: 'ImagePrewarm', metadata: { name }, spec: { images: [env.sandbox.images.appV1], nodeSelector: { 'inplace-test/none': run }, imagePullSecrets: [{ namespace: ns, name: 'regcred' }] } });
    const create = async (u: TestUser, name: string) =>
      u.kc.makeApiClient(k8s.CustomObjectsApi).createClusterCustomObject({ group: CR_GROUP, version: 'v1alpha1', plural: 'imageprewarms', body: body(name) }).then(() => undefined, failure);
    const refused = await create(warmer, `sec-deny-${run}`);
    assert.equal(refused?.code, 403, JSON.stringify(refused));
    assert.match(refused.message, new RegExp(`ImagePrewarm needs get on each Secret it names; user ${warmer.username} may not get all of secrets/regcred in namespace ${ns}`));
    assert.equal(await create(reader, `sec-allow-${run}`), undefined, 'a creator who may read the Secret may name it');
    await admin.makeApiClient(k8s.CustomObjectsApi).deleteClusterCustomObject({ group: CR_GROUP, version: 'v1alpha1', plural: 'imageprewarms', name: `sec-allow-${run}` });
  });

  describe('without the admission policies (an older cluster, or a user who skipped the files)', () => {
    before(async () => {
      policiesRemoved = true;
      await deleteDeployFiles(admin, POLICY_FILES);
      await policiesInForce(false);
    });
    after(async () => {
      await applyDeployFiles(admin, POLICY_FILES);
      await policiesInForce(true);
      policiesRemoved = false;
    });

    it("the agent's own SubjectAccessReview refuses what admission would have: status Forbidden naming the permission, the pod untouched", async () => {
      const before = podState(await ready());
      // Created as inplacectl creates them: the requester is the creator's own identity (a SelfSubjectReview).
      const cases: [TestUser, string, ContainerRestart['spec']['containers'], RegExp][] = [
        [users.createOnly, 'nopol-co-image', [{ name: 'app', image: env.sandbox.images.appV1 }], /may not patch pods\/web in namespace kacc-\w+, which it needs to change the image of app/],
        [users.createOnly, 'nopol-co-restart', [{ name: 'app' }], /may not delete pods\/web in namespace kacc-\w+ or patch pods\/web/],
        [users.deleter, 'nopol-del-image', [{ name: 'side', image: env.sandbox.images.appV2 }], /system:serviceaccount:kacc-\w+:deleter may not patch pods\/web/],
      ];
      for (const [user, name, containers] of cases) await new ContainerRestartApi(user.kc).create(containerRestart(ns, name, { podName: 'web', containers }));
      for (const [user, name, , re] of cases) {
        const done = await waitForStatus(adminCrs, ns, name, (cr) => cr.status?.phase === 'Failed' || cr.status?.phase === 'Succeeded', 60_000);
        assert.equal(done.spec.requester?.username, user.username);
        assert.equal(done.status?.phase, 'Failed', JSON.stringify(done.status));
        const cond = done.status?.conditions?.find((c) => c.type === 'Succeeded');
        assert.equal(cond?.reason, 'Forbidden', JSON.stringify(cond));
        assert.match(done.status?.message ?? '', re);
        assert.match(done.status?.message ?? '', /nothing was touched/);
        assert.equal(done.status?.operationId, undefined, `never taken as an operation: ${JSON.stringify(done.status)}`);
      }
      // A request with no requester at all (a client that skipped it, no policy to write it) is refused too.
      const bare = await createAs(users.patcher, containerRestart(ns, 'nopol-anon', { podName: 'web', containers: [{ name: 'app' }] }));
      assert.equal(bare, undefined);
      const anon = await waitForStatus(adminCrs, ns, 'nopol-anon', (cr) => cr.status?.phase === 'Failed', 60_000);
      assert.equal(anon.status?.conditions?.find((c) => c.type === 'Succeeded')?.reason, 'Forbidden');
      assert.match(anon.status?.message ?? '', /records no requester/);
      assert.equal(podState(await readPod()), before, 'the pod is as it was');
    });

    it('the fleet agent checks the creator before reading a Secret: an ImagePrewarm naming one its creator cannot get ends Failed, Forbidden', async () => {
      await applyCrds(admin, ['imageprewarm.yaml', 'nodeprewarm.yaml']);
      const node = `sec-fleet-${run}`;
      await ensureNode(admin, node, { 'inplace-test/sec-fleet': run });
      // The agent as deploy/ grants it: the ClusterRoles of deploy/rbac.yaml and deploy/optional/fleet-prewarm-rbac.yaml,
      // bound to a ServiceAccount of this test (the slot Leases in the test's namespace).
      const roles = [...deployObjects('rbac.yaml'), ...deployObjects('optional/fleet-prewarm-rbac.yaml')].filter((o) => o.kind === 'ClusterRole') as k8s.V1ClusterRole[];
      const leaseRole = (deployObjects('optional/fleet-prewarm-rbac.yaml').find((o) => o.kind === 'Role') as k8s.V1Role).rules ?? [];
      const agentUser = await userWithRules(admin, ns, 'fleet-agent', leaseRole, roles.flatMap((r) => r.rules ?? []));
      const warmer = await userWithRules(admin, ns, 'warmer2', [], [{ apiGroups: [CR_GROUP], resources: ['imageprewarms'], verbs: ['create'] }]);
      const name = `sec-nopol-${run}`;
      const { createPrewarm } = await import('../../src/cli/prewarm-api.js');
      try {
        const prewarm = {
          apiVersion: `${CR_GROUP}/v1alpha1`,
          kind: 'ImagePrewarm',
          metadata: { name },
          spec: { images: [env.sandbox.images.appV1], nodeSelector: { 'inplace-test/sec-fleet': run }, imagePullSecrets: [{ namespace: AGENT_NS, name: 'no-such-but-forbidden' }], backoffLimit: 3 },
        };
        await createPrewarm(warmer.kc, prewarm);
        // The puller must never be reached: a refused prewarm pulls nothing.
        const puller = { present: async () => false, pull: async () => assert.fail('the agent pulled for a refused prewarm') } as unknown as FleetPuller;
        const agent = new FleetAgent(new KubeFleetApi(agentUser.kc, systemClock), puller, { ...FLEET_DEFAULTS, node, leaseNamespace: ns, pollMs: 300, backoffBaseMs: 500 }, systemClock, memoryLogger().logger, undefined, new SubjectAccessReviewer(agentUser.kc));
        agent.start();
        try {
          const custom = admin.makeApiClient(k8s.CustomObjectsApi);
          const entry = await until(`${name} Failed on ${node}`, 60_000, async () => {
            const np = (await custom.getClusterCustomObject({ group: CR_GROUP, version: 'v1alpha1', plural: 'nodeprewarms', name: node }).catch(() => undefined)) as NodePrewarm | undefined;
            const e = np?.status?.prewarms?.[name];
            return e?.phase === 'Failed' ? e : undefined;
          });
          const msg = entry.images[0].message ?? '';
          assert.equal(entry.images[0].reason, 'Forbidden', 'the reason is a field of its own');
          assert.match(msg, /^ImagePrewarm sec-nopol-\w+: its creator system:serviceaccount:kacc-\w+:warmer2 may not get secrets\/no-such-but-forbidden in namespace inplace-system/);
          assert.equal(entry.images[0].attempts, 1, 'refused for good at once, not retried');
        } finally {
          await agent.stop();
        }
      } finally {
        await admin.makeApiClient(k8s.CustomObjectsApi).deleteClusterCustomObject({ group: CR_GROUP, version: 'v1alpha1', plural: 'imageprewarms', name }).catch(() => undefined);
        await admin.makeApiClient(k8s.CustomObjectsApi).deleteClusterCustomObject({ group: CR_GROUP, version: 'v1alpha1', plural: 'nodeprewarms', name: node }).catch(() => undefined);
        await deleteNodes(admin, [node]);
      }
    });
  });
});
