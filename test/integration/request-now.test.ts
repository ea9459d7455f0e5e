// The requester checked as of now, not as of admission (issue 28, findings 3, 5, 7 and 10), on the real cluster with
// the DaemonSet's agent and deploy/'s admission policies. ServiceAccounts hold exactly the rights each case
// names. A request made before its pod exists waits for it and runs when the pod comes to the node (no agent
// restart); a waiting request whose ServiceAccount was deleted meanwhile is refused then; one nobody took within its
// unclaimedTTLSeconds fails; a static pod is refused without the cluster admin's opt-in; an image change goes
// through admission as its creator (a dry run impersonating them); and without the mutating
// policy, a requester with an extra the API server did not authenticate is refused at admission.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { selfRequester } from '../../src/k8s/requester.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { applyCrd, createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { applyDeployFiles, deleteClusterRules, deleteDeployFiles, failure, POLICY_FILES, until, userWithRules, type TestUser } from '../support/kube-users.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = kubeEnv();
const AGENT_NS = 'inplace-system';
const STATIC_DIR = path.join(process.env.INPLACE_KUBE_DIR ?? '/tmp/inplace-kube', 'kube', 'static-pods');
const CR_RULE = (verbs: string[]): k8s.V1PolicyRule => ({ apiGroups: [CR_GROUP], resources: [CR_PLURAL], verbs });
const POD_RULE = (verbs: string[]): k8s.V1PolicyRule => ({ apiGroups: [''], resources: ['pods'], verbs });

describe('the requester as of now, and requests waiting for their pod (the DaemonSet agent, real cluster)', function () {
  this.timeout(300_000);
  const admin = new k8s.KubeConfig();
  let core: k8s.CoreV1Api;
  let crs: ContainerRestartApi;
  let ns = '';
  let patcher: TestUser;
  let requesterPolicyRemoved = false;
  const run = randomBytes(3).toString('hex');
  const staticName = `now-static-${run}`;
  const staticFile = path.join(STATIC_DIR, `${staticName}.yaml`);
  const mirror = `${staticName}-${env.nodeName}`;

  const isReady = (p: k8s.V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const readPod = (name: string) => core.readNamespacedPod({ namespace: ns, name });
  const ready = (name: string) => until(`pod ${name} Ready`, 90_000, async () => ((p) => (p && isReady(p) ? p : undefined))(await readPod(name).catch(() => undefined)));
  const podSpec = (): k8s.V1PodSpec => ({ terminationGracePeriodSeconds: 5, containers: [{ name: 'app', image: env.sandbox.images.appV1, args: ['sh', '-c', TRAP_TERM_APP] }] });
  const createPod = (name: string) => core.createNamespacedPod({ namespace: ns, body: { metadata: { name }, spec: { ...podSpec(), nodeName: env.nodeName } } });
  const state = (p: k8s.V1Pod) => JSON.stringify({ uid: p.metadata?.uid, images: p.spec?.containers.map((c) => c.image), running: (p.status?.containerStatuses ?? []).map((s) => `${s.containerID}:${s.restartCount}`) });
  const finished = (cr: ContainerRestart) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed';
  const reasonOf = (cr: ContainerRestart) => cr.status?.conditions?.find((c) => c.type === 'Succeeded')?.reason;

  /**
   * The agent's sign that it has looked at every request made before now: a request it refuses at once (a container
   * pod web lacks) reaches its Failed status after the agent read the earlier ones from its watch, in order.
   */
  const sentinel = async () => {
    const name = `sentinel-${randomBytes(3).toString('hex')}`;
    await crs.create(containerRestart(ns, name, { podName: 'web', containers: [{ name: 'ghost' }] }));
    const done = await waitForStatus(crs, ns, name, (cr) => cr.status?.phase === 'Failed', 60_000);
    assert.equal(done.status?.reason, 'ContainerNotFound');
  };

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet ${AGENT_NS}/inplace-agent Ready on node ${env.nodeName} (scripts/kube-deploy-agent), static pods in ${STATIC_DIR}`, async () => {
      admin.loadFromFile(env.kubeconfig);
      core = admin.makeApiClient(k8s.CoreV1Api);
      const pods = await core.listNamespacedPod({ namespace: AGENT_NS, fieldSelector: `spec.nodeName=${env.nodeName}`, labelSelector: 'app.kubernetes.io/name=inplace-agent' });
      if (!pods.items.some((p) => !p.metadata?.deletionTimestamp && isReady(p))) throw new Error(`no Ready pod of the DaemonSet on ${env.nodeName}`);
      await fs.access(STATIC_DIR);
    });
    // This checkout's CRD, the agent's RBAC and the policies (other suites may have applied older ones).
    await applyCrd(admin);
    await applyDeployFiles(admin, ['rbac.yaml', ...POLICY_FILES]);
    crs = new ContainerRestartApi(admin);
    ns = await createNamespace(admin, 'know');
    patcher = await userWithRules(admin, ns, 'patcher', [CR_RULE(['create']), POD_RULE(['patch', 'delete'])]);
    await createPod('web');
    await ready('web');
  });

  after(async () => {
    await fs.rm(staticFile, { force: true });
    if (requesterPolicyRemoved) await applyDeployFiles(admin, POLICY_FILES);
    if (ns) {
      await deleteClusterRules(admin, ns);
      await deleteNamespace(admin, ns);
    }
  });

  it('a request made before its pod exists runs when the pod arrives on the node, without an agent restart', async () => {
    await new ContainerRestartApi(patcher.kc).create(containerRestart(ns, 'early', { podName: 'late', containers: [{ name: 'app', image: env.sandbox.images.appV2 }], strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } }));
    await sentinel();
    assert.equal((await crs.get(ns, 'early')).status, undefined, 'left alone while its pod does not exist');
    const created = await createPod('late');
    const done = await waitForStatus(crs, ns, 'early', finished, 90_000);
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    assert.equal(done.status?.nodeName, env.nodeName);
    const after = await readPod('late');
    assert.equal(after.metadata?.uid, created.metadata?.uid, 'the same pod');
    assert.equal(after.spec?.containers[0].image, env.sandbox.images.appV2);
  });

  it("a waiting request whose ServiceAccount was deleted is refused when its pod arrives (RequesterGone); the pod is untouched", async () => {
    const leaver = await userWithRules(admin, ns, 'leaver', [CR_RULE(['create']), POD_RULE(['patch'])]);
    const made = await new ContainerRestartApi(leaver.kc).create(containerRestart(ns, 'orphan', { podName: 'late2', containers: [{ name: 'app', image: env.sandbox.images.appV2 }] }));
    assert.equal(made.spec.requester?.username, leaver.username);
    await sentinel();
    // The ServiceAccount goes; its RoleBinding stays behind, so an access review of the recorded user still passes.
    await core.deleteNamespacedServiceAccount({ namespace: ns, name: 'leaver' });
    await createPod('late2');
    const done = await waitForStatus(crs, ns, 'orphan', finished, 90_000);
    assert.equal(done.status?.phase, 'Failed', JSON.stringify(done.status));
    assert.equal(reasonOf(done), 'RequesterGone');
    assert.equal(done.status?.reason, 'RequesterGone');
    assert.match(done.status?.message ?? '', new RegExp(`${leaver.username} no longer exists`));
    assert.equal(done.status?.operationId, undefined, 'never taken as an operation');
    const pod = await ready('late2');
    assert.equal(pod.spec?.containers[0].image, env.sandbox.images.appV1);
    assert.equal(pod.status?.containerStatuses?.[0].restartCount, 0);
  });

  it('a request nobody took within its unclaimedTTLSeconds fails (UnclaimedRequestExpired) and does not run when its pod comes', async () => {
    await crs.create(containerRestart(ns, 'stale', { podName: 'late3', containers: [{ name: 'app', image: env.sandbox.images.appV2 }], unclaimedTTLSeconds: 2 }));
    const done = await waitForStatus(crs, ns, 'stale', finished, 60_000);
    assert.equal(done.status?.phase, 'Failed', JSON.stringify(done.status));
    assert.equal(reasonOf(done), 'UnclaimedRequestExpired');
    assert.match(done.status?.message ?? '', /not taken within its unclaimedTTLSeconds \(2 s/);
    await createPod('late3');
    const before = state(await ready('late3'));
    await sentinel();
    assert.equal(state(await readPod('late3')), before, 'the pod is as it came');
    assert.equal((await crs.get(ns, 'stale')).status?.completionTime, done.status?.completionTime, 'the request stays as it ended');
  });

  it('a static pod: refused without spec.allowStaticPod (StaticPodRefused); the opt-in needs restart-static, which a pod admin lacks and a cluster admin holds', async () => {
    await fs.writeFile(staticFile, JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: staticName, namespace: ns }, spec: podSpec() }));
    const before = await ready(mirror);
    assert.ok(before.metadata?.annotations?.['kubernetes.io/config.mirror'], 'a mirror pod');
    // A user who may patch and delete the mirror pod: deleting it never touches its containers, a restart would.
    await new ContainerRestartApi(patcher.kc).create(containerRestart(ns, 'static-plain', { podName: mirror, containers: [{ name: 'app' }] }));
    const plain = await waitForStatus(crs, ns, 'static-plain', finished, 60_000);
    assert.equal(plain.status?.phase, 'Failed', JSON.stringify(plain.status));
    assert.equal(reasonOf(plain), 'StaticPodRefused');
    assert.match(plain.status?.message ?? '', /is a static pod/);
    assert.equal(state(await readPod(mirror)), state(before), 'the static pod is untouched');
    const optIn = containerRestart(ns, 'static-user', { podName: mirror, containers: [{ name: 'app' }], allowStaticPod: true });
    const refused = await patcher.kc
      .makeApiClient(k8s.CustomObjectsApi)
      .createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, body: optIn })
      .then(() => undefined, failure);
    assert.equal(refused?.code, 403, JSON.stringify(refused));
    assert.match(refused.message, /spec\.allowStaticPod needs restart-static on containerrestarts\.inplace-agent\.io/);
    // The cluster admin (system:masters) holds every verb, restart-static too.
    await crs.create(containerRestart(ns, 'static-admin', { podName: mirror, containers: [{ name: 'app' }], allowStaticPod: true, strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } }));
    const ran = await waitForStatus(crs, ns, 'static-admin', finished, 90_000);
    assert.equal(ran.status?.phase, 'Succeeded', JSON.stringify(ran.status));
    const after = await ready(mirror);
    assert.equal(after.status?.containerStatuses?.[0].restartCount, (before.status?.containerStatuses?.[0].restartCount ?? 0) + 1, 'restarted once');
  });

  it("admission as the requester: a ValidatingAdmissionPolicy forbidding a user to change pod images stops that user's ContainerRestart (AdmissionRefused), the pod untouched", async () => {
    const dev = await userWithRules(admin, ns, 'dev', [CR_RULE(['create']), POD_RULE(['get', 'patch'])]);
    const adm = admin.makeApiClient(k8s.AdmissionregistrationV1Api);
    const name = `inplace-test-no-image-${run}`;
    await adm.createValidatingAdmissionPolicy({
      body: {
        metadata: { name },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods'] }] },
          matchConditions: [{ name: 'dev', expression: `request.userInfo.username == '${dev.username}'` }],
          validations: [{ expression: 'object.spec.containers.map(c, c.image) == oldObject.spec.containers.map(c, c.image)', message: 'this user may not change pod images' }],
        },
      },
    });
    try {
      await adm.createValidatingAdmissionPolicyBinding({ body: { metadata: { name }, spec: { policyName: name, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } } } } });
      const devCore = dev.kc.makeApiClient(k8s.CoreV1Api);
      const patch = { spec: { containers: [{ name: 'app', image: env.sandbox.images.appV2 }] } };
      await until('the policy in force for dev', 60_000, async () => {
        const r = await devCore
          .patchNamespacedPod({ namespace: ns, name: 'web', body: patch, dryRun: 'All' }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch))
          .then(() => undefined, failure);
        // A policy's validation without a reason answers 422 Invalid.
        return r && /may not change pod images/.test(r.message) ? true : undefined;
      });
      const before = state(await ready('web'));
      await new ContainerRestartApi(dev.kc).create(containerRestart(ns, 'as-dev', { podName: 'web', containers: [{ name: 'app', image: env.sandbox.images.appV2 }] }));
      const done = await waitForStatus(crs, ns, 'as-dev', finished, 60_000);
      assert.equal(done.status?.phase, 'Failed', JSON.stringify(done.status));
      assert.equal(reasonOf(done), 'AdmissionRefused');
      assert.match(done.status?.message ?? '', /this user may not change pod images/);
      assert.match(done.status?.message ?? '', new RegExp(`admission refuses ${dev.username}`));
      assert.equal(done.status?.operationId, undefined, 'never taken as an operation');
      assert.equal(state(await readPod('web')), before, 'the pod is untouched');
    } finally {
      await adm.deleteValidatingAdmissionPolicyBinding({ name }).catch(() => undefined);
      await adm.deleteValidatingAdmissionPolicy({ name }).catch(() => undefined);
    }
  });

  describe('without the mutating requester policy (deploy/admission-requester.yaml not installed)', () => {
    const requesterPolicy = POLICY_FILES.filter((f) => f === 'admission-requester.yaml');
    /** Whether a dry-run create by patcher gets its requester written by the API server. */
    const written = async () => {
      const probe = containerRestart(ns, `probe-${randomBytes(3).toString('hex')}`, { podName: 'web', containers: [{ name: 'app' }] });
      const made = (await patcher.kc.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, body: probe, dryRun: 'All' })) as ContainerRestart;
      return made.spec.requester !== undefined;
    };
    before(async () => {
      requesterPolicyRemoved = true;
      await deleteDeployFiles(admin, requesterPolicy);
      await until('the requester policy gone', 60_000, async () => ((await written()) ? undefined : true));
    });
    after(async () => {
      await applyDeployFiles(admin, requesterPolicy);
      await until('the requester policy in force', 60_000, async () => ((await written()) ? true : undefined));
      requesterPolicyRemoved = false;
    });

    it('a requester with an extra the API server did not authenticate is refused at admission; the real one is accepted', async () => {
      const me = await selfRequester(patcher.kc);
      const create = (name: string, requester: ContainerRestart['spec']['requester']) =>
        patcher.kc
          .makeApiClient(k8s.CustomObjectsApi)
          .createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, body: containerRestart(ns, name, { podName: 'web', containers: [{ name: 'app' }], requester }), dryRun: 'All' })
          .then(() => undefined, failure);
      const forged = await create('forged-extra', { ...me, extra: { ...me.extra, 'scopes.example.com/role': ['cluster-admin'] } });
      assert.equal(forged?.code, 403, JSON.stringify(forged));
      assert.match(forged.message, /ValidatingAdmissionPolicy 'inplace-agent-containerrestart'/);
      assert.match(forged.message, /spec\.requester must be the user creating the request/);
      const dropped = await create('dropped-extra', { ...me, extra: {} });
      assert.equal(dropped?.code, 403, `an extra left out is refused too: ${JSON.stringify(dropped)}`);
      assert.equal(await create('real', me), undefined, 'the requester as authenticated is accepted');
    });
  });
});
