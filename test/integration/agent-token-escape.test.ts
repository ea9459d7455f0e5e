// A stolen agent token stays on its node (issue 39), on the real cluster with deploy/'s RBAC and policies:
// - impersonation: with the token bound to node A's agent pod, a real (not dry-run) image patch of node B's pod
//   impersonating a ServiceAccount (kube-system's replicaset-controller, which may patch pods), a plain user, or a
//   user with groups, each bound here to patch pods, is refused, and so is the ServiceAccount with its uid; the
//   pod's image is unchanged. A dry run as that ServiceAccount still passes (the check as a request's creator,
//   admission-as-requester.ts, is kept; request-now.test.ts shows it refusing what admission refuses).
// - fail closed: a TokenRequest of the agent's ServiceAccount bound to nothing (as `kubectl create token
//   inplace-agent -n inplace-system` makes) writes no pod, pod status, NodePrewarm or ContainerRestart status and
//   deletes no pod, even on node A; the node-bound token still writes node A's pod and relabels node B's.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import https from 'node:https';
import * as k8s from '@kubernetes/client-node';
import { CR_GROUP, CR_PLURAL, CR_VERSION } from '../../src/controllers/container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, NODE_PREWARM_PLURAL } from '../../src/controllers/image-prewarm/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart } from '../support/container-restarts.js';
import { daemonSetAgent, AGENT_DS } from '../support/daemonset-agent.js';
import { holdFleetRbac, type FleetRbacHold } from '../support/fleet-rbac-hold.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { kubeTest } from '../support/kube-test.js';
import { applyDeployFiles, failure, tokenConfig, until } from '../support/kube-users.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';

const ISOLATION = 'inplace-agent-node-isolation';
const DRY_RUN_ONLY = 'inplace-agent-impersonation-dry-run-only';
const AGENT_USER = `system:serviceaccount:${AGENT_DS.namespace}:inplace-agent`;
const RS_CONTROLLER = 'system:serviceaccount:kube-system:replicaset-controller';

/** The status and the API server's message of one raw request. */
interface Answer {
  status: number;
  message: string;
}

/** Sends one request to kc's API server with extra headers (impersonation); multi-valued headers as arrays. */
async function send(kc: k8s.KubeConfig, method: string, path: string, headers: Record<string, string | string[]>, body?: object): Promise<Answer> {
  const server = kc.getCurrentCluster()?.server ?? '';
  const opts: https.RequestOptions = { method, headers: {} };
  await kc.applyToHTTPSOptions(opts);
  opts.headers = { ...opts.headers, ...headers, 'Content-Type': 'application/strategic-merge-patch+json', Accept: 'application/json' };
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(path, server), opts, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        let message = text.slice(0, 400);
        try {
          message = (JSON.parse(text) as { message?: string }).message ?? message;
        } catch {
          // not a Status
        }
        resolve({ status: res.statusCode ?? 0, message });
      });
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

describe("a stolen agent token stays on its node: no write as anyone else, none without a node (issue 39)", function () {
  this.timeout(180_000);
  const env = kubeEnv();
  const run = randomBytes(3).toString('hex');
  const target = `inplace-test-target-${run}`;
  const group = `inplace-test-patchers-${run}`;
  let admin: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let bound: k8s.KubeConfig;
  let unbound: k8s.KubeConfig;
  let hold: FleetRbacHold | undefined;
  let ns = '';
  let nodeA = '';
  let nodeB = '';

  const podPath = (name: string, dryRun = false) => `/api/v1/namespaces/${ns}/pods/${name}${dryRun ? '?dryRun=All' : ''}`;
  const imagePatch = { spec: { containers: [{ name: 'app', image: '' }] } };
  const imageOf = async (name: string) => (await core.readNamespacedPod({ namespace: ns, name })).spec?.containers[0].image;
  const smp = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch);
  const refusal = async (p: Promise<unknown>) => p.then(() => undefined, failure);

  before(async function () {
    ({ kc: admin, core } = await kubeTest(this));
    if (env.nodes.length < 2) throw new Error(`this test needs 2 nodes; the cluster runs ${env.nodes.map((n) => n.name).join(', ')}`);
    [nodeA, nodeB] = [env.nodes[0].name, env.nodes[1].name];
    imagePatch.spec.containers[0].image = env.sandbox.images.appV2;
    await applyDeployFiles(admin, ['rbac.yaml', 'node-isolation-policy.yaml']);
    hold = await holdFleetRbac(admin, `token-escape-${run}`);
    const agentPod = (await daemonSetAgent(admin, nodeA)).pod;
    const token = async (boundObjectRef?: k8s.V1BoundObjectReference) =>
      (await core.createNamespacedServiceAccountToken({ name: 'inplace-agent', namespace: AGENT_DS.namespace, body: { spec: { audiences: [], expirationSeconds: 600, boundObjectRef } } })).status?.token ?? '';
    bound = tokenConfig(admin, AGENT_USER, await token({ apiVersion: 'v1', kind: 'Pod', name: agentPod.metadata?.name, uid: agentPod.metadata?.uid }));
    unbound = tokenConfig(admin, `${AGENT_USER}-unbound`, await token());
    const who = await unbound.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    assert.equal(who.status?.userInfo?.username, AGENT_USER);
    assert.equal(who.status?.userInfo?.extra?.['authentication.kubernetes.io/node-name'], undefined, 'the unbound token names no node');

    ns = await createNamespace(admin, 'tesc');
    for (const [name, nodeName] of [['a', nodeA], ['b', nodeB]]) {
      await core.createNamespacedPod({
        namespace: ns,
        body: { metadata: { name }, spec: { nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: env.sandbox.images.appV1, args: ['sh', '-c', TRAP_TERM_APP] }] } },
      });
    }
    // Who the attacker impersonates: a plain user and a group, each allowed to patch pods in the namespace.
    const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'patch-pods' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] }] } });
    for (const [kind, name] of [['User', target], ['Group', group]]) {
      await rbac.createNamespacedRoleBinding({
        namespace: ns,
        body: { metadata: { name: `patch-pods-${kind.toLowerCase()}` }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'patch-pods' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind, name }] },
      });
    }
    // Both policies in force: the unbound token's dry run on node A's pod is refused by the isolation policy, and a
    // real relabel impersonating a ServiceAccount without its uid (here by the admin) by the dry-run-only policy.
    await until(`${ISOLATION} failing closed`, 60_000, async () => ((await send(unbound, 'PATCH', podPath('a', true), {}, imagePatch)).message.includes(ISOLATION) ? true : undefined));
    await until(`${DRY_RUN_ONLY} in force`, 60_000, async () => {
      const r = await send(admin, 'PATCH', podPath('a'), { 'Impersonate-User': RS_CONTROLLER }, { metadata: { labels: { probe: run } } });
      return r.message.includes(DRY_RUN_ONLY) ? true : undefined;
    });
  });

  after(async () => {
    if (ns) await deleteNamespace(admin, ns);
    await hold?.release();
  });

  it("the node-bound token, refused on node B's pod as itself, is refused too when it impersonates a ServiceAccount that may patch pods; a dry run as it passes", async () => {
    const own = await send(bound, 'PATCH', podPath('b'), {}, imagePatch);
    assert.equal(own.status, 403, own.message);
    assert.match(own.message, new RegExp(`${ISOLATION}.*the agent on node ${nodeA} may not write pods`));
    const canPatch = await admin.makeApiClient(k8s.AuthorizationV1Api).createSubjectAccessReview({
      body: { spec: { user: RS_CONTROLLER, groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'], resourceAttributes: { verb: 'patch', resource: 'pods', namespace: ns } } },
    });
    assert.equal(canPatch.status?.allowed, true, 'the impersonated ServiceAccount may patch pods: RBAC alone would let the write through');
    const as = await send(bound, 'PATCH', podPath('b'), { 'Impersonate-User': RS_CONTROLLER }, imagePatch);
    assert.equal(as.status, 403, as.message);
    assert.match(as.message, new RegExp(`ValidatingAdmissionPolicy '${DRY_RUN_ONLY}'.*${RS_CONTROLLER} has no uid here, so this is an impersonated request`));
    const dry = await send(bound, 'PATCH', podPath('b', true), { 'Impersonate-User': RS_CONTROLLER }, imagePatch);
    assert.equal(dry.status, 200, `the dry run as a ServiceAccount, the agent's check as a request's creator: ${dry.message}`);
    assert.equal(await imageOf('b'), env.sandbox.images.appV1, "node B's pod keeps its image");
  });

  it('impersonating the ServiceAccount with its uid, a plain user, or a user with groups is refused at authentication; the pod keeps its image', async () => {
    const sa = await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'patcher' } } });
    const attempts: [string, Record<string, string | string[]>][] = [
      ['a ServiceAccount with its uid', { 'Impersonate-User': `system:serviceaccount:${ns}:patcher`, 'Impersonate-Uid': sa.metadata?.uid ?? '' }],
      ['a plain user', { 'Impersonate-User': target }],
      ['a user with a group', { 'Impersonate-User': `someone-${run}`, 'Impersonate-Group': group }],
      ['a user with groups and extra', { 'Impersonate-User': target, 'Impersonate-Group': [group, 'system:authenticated'], 'Impersonate-Extra-Scopes': 'all' }],
    ];
    for (const [what, headers] of attempts) {
      const r = await send(bound, 'PATCH', podPath('b'), headers, imagePatch);
      assert.equal(r.status, 403, `${what}: ${r.status} ${r.message}`);
      assert.match(r.message, /cannot impersonate/, what);
    }
    assert.equal(await imageOf('b'), env.sandbox.images.appV1, "node B's pod keeps its image");
  });

  it('a token bound to no node writes no pod, pod status, NodePrewarm or ContainerRestart status, and deletes no pod, even on node A', async () => {
    const noNode = new RegExp(`${ISOLATION}.*a token of the agent's ServiceAccount that names no node`);
    const image = await send(unbound, 'PATCH', podPath('a'), {}, imagePatch);
    assert.equal(image.status, 403, image.message);
    assert.match(image.message, noNode);
    assert.match(image.message, new RegExp(`may not write pods of Pod ${ns}/a`));
    const label = await send(unbound, 'PATCH', podPath('b'), {}, { metadata: { labels: { moved: run } } });
    assert.equal(label.status, 403, label.message);
    const status = await send(unbound, 'PATCH', `${podPath('a')}/status`, {}, { status: { conditions: [{ type: 'inplace-agent.io/test', status: 'True' }] } });
    assert.equal(status.status, 403, status.message);
    assert.match(status.message, new RegExp(`${ISOLATION}.*may not write pods/status of Pod ${ns}/a`));
    const del = await refusal(unbound.makeApiClient(k8s.CoreV1Api).deleteNamespacedPod({ namespace: ns, name: 'b' }));
    assert.equal(del?.code, 403, JSON.stringify(del));
    assert.match(del.message, new RegExp(`${ISOLATION}.*may not delete pods of Pod ${ns}/b`));

    const custom = unbound.makeApiClient(k8s.CustomObjectsApi);
    const record = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'NodePrewarm', metadata: { name: nodeA }, spec: { nodeName: nodeA } };
    const npw = await refusal(custom.createClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, body: record }));
    // node A's agent may have made its record already: the create is then refused by the policy or answered 409
    // after it; the status write below is refused by the policy either way.
    assert.ok(npw?.code === 403 || npw?.code === 409, JSON.stringify(npw));
    if (npw?.code === 403) assert.match(npw.message, noNode);
    const adminCustom = admin.makeApiClient(k8s.CustomObjectsApi);
    await adminCustom.createClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, body: record }).catch((err: unknown) => {
      if (failure(err).code !== 409) throw err;
    });
    const cur = (await adminCustom.getClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, name: nodeA })) as { status?: object };
    const npwStatus = await refusal(custom.replaceClusterCustomObjectStatus({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, name: nodeA, body: { ...cur, status: cur.status ?? {} } }));
    assert.equal(npwStatus?.code, 403, JSON.stringify(npwStatus));
    assert.match(npwStatus.message, noNode);

    const crOps = { group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, name: `ghost-${run}` };
    await adminCustom.createNamespacedCustomObject({ ...crOps, body: containerRestart(ns, crOps.name, { podName: 'ghost', containers: [{ name: 'app' }] }) });
    const crNow = (await adminCustom.getNamespacedCustomObject(crOps)) as object;
    const crStatus = await refusal(custom.replaceNamespacedCustomObjectStatus({ ...crOps, body: { ...crNow, status: { nodeName: nodeA } } }));
    assert.equal(crStatus?.code, 403, JSON.stringify(crStatus));
    assert.match(crStatus.message, noNode);

    assert.equal(await imageOf('a'), env.sandbox.images.appV1, "node A's pod keeps its image");
    assert.equal((await core.readNamespacedPod({ namespace: ns, name: 'b' })).metadata?.labels?.moved, undefined, "node B's pod keeps its labels");
  });

  it("the node-bound token still writes node A's pod and its status, and relabels node B's (the coordinator's cross-node write)", async () => {
    const agentCore = bound.makeApiClient(k8s.CoreV1Api);
    await agentCore.patchNamespacedPod({ namespace: ns, name: 'a', body: imagePatch }, smp);
    await agentCore.patchNamespacedPodStatus({ namespace: ns, name: 'a', body: { status: { conditions: [{ type: 'inplace-agent.io/test', status: 'True' }] } } }, smp);
    await agentCore.patchNamespacedPod({ namespace: ns, name: 'b', body: { metadata: { labels: { 'controller-revision-hash': `rev-${run}` } } } }, smp);
    assert.equal(await imageOf('a'), env.sandbox.images.appV2);
    assert.equal((await core.readNamespacedPod({ namespace: ns, name: 'b' })).metadata?.labels?.['controller-revision-hash'], `rev-${run}`);
  });
});
