// Each node's agent limited to its own node (issue 28, finding 11): deploy/node-isolation-policy.yaml, on the real
// cluster, with the agent's own identity. The token is a TokenRequest of the shipped ServiceAccount bound to the
// DaemonSet's agent pod on node A, as the kubelet's projected token is; the API server then names node A in the
// user's extra (checked here by a SelfSubjectReview). With it, writes to node B's pod and NodePrewarm are refused
// at admission, and the same writes on node A succeed.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { CR_GROUP, CR_PLURAL, CR_VERSION } from '../../src/controllers/container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, NODE_PREWARM_PLURAL, type ImagePrewarm, type NodePrewarm } from '../../src/controllers/image-prewarm/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart } from '../support/container-restarts.js';
import { daemonSetAgent, AGENT_DS } from '../support/daemonset-agent.js';
import { holdFleetRbac, type FleetRbacHold } from '../support/fleet-rbac-hold.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { kubeTest } from '../support/kube-test.js';
import { applyDeployFiles, failure, tokenConfig, until } from '../support/kube-users.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';

const POLICY = 'inplace-agent-node-isolation';
const NODE_EXTRA = 'authentication.kubernetes.io/node-name';
const AGENT_USER = `system:serviceaccount:${AGENT_DS.namespace}:inplace-agent`;

describe("each node's agent writes only its own node's objects (node-isolation policy, a token bound to the agent's pod)", function () {
  this.timeout(180_000);
  const env = kubeEnv();
  const run = randomBytes(3).toString('hex');
  let admin: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let agentCore: k8s.CoreV1Api;
  let agentCustom: k8s.CustomObjectsApi;
  let adminCustom: k8s.CustomObjectsApi;
  let hold: FleetRbacHold | undefined;
  let ns = '';
  let nodeA = '';
  let nodeB = '';

  const smp = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch);
  const patchPod = (name: string, body: object, dryRun?: string) => agentCore.patchNamespacedPod({ namespace: ns, name, body, dryRun }, smp);
  const patchPodStatus = (name: string, body: object) => agentCore.patchNamespacedPodStatus({ namespace: ns, name, body }, smp);
  const imagePatch = (image: string) => ({ spec: { containers: [{ name: 'app', image }] } });
  const refusal = async (p: Promise<unknown>) => p.then(() => undefined, failure);
  const npwOps = (name: string) => ({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, name });

  /** Writes node's NodePrewarm status back as read (no change), as the agent; retried on a conflict with its real agent. */
  async function rewriteRecord(node: string): Promise<{ code: number; message: string } | undefined> {
    for (let i = 0; ; i++) {
      const cur = (await adminCustom.getClusterCustomObject(npwOps(node))) as NodePrewarm;
      const r = await refusal(agentCustom.replaceClusterCustomObjectStatus({ ...npwOps(node), body: { ...cur, status: cur.status ?? {} } }));
      if (r?.code !== 409 || i >= 4) return r;
    }
  }

  /** Makes node's NodePrewarm exist (as its agent would make it), as client. */
  async function ensureRecord(custom: k8s.CustomObjectsApi, node: string): Promise<void> {
    const body = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'NodePrewarm', metadata: { name: node }, spec: { nodeName: node } };
    await custom.createClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, body }).catch((err: unknown) => {
      if (failure(err).code !== 409) throw err;
    });
  }

  before(async function () {
    ({ kc: admin, core } = await kubeTest(this));
    if (env.nodes.length < 2) throw new Error(`the node isolation test needs 2 nodes; the cluster runs ${env.nodes.map((n) => n.name).join(', ')} (scripts/kube-sandbox up --nodes 3)`);
    [nodeA, nodeB] = [env.nodes[0].name, env.nodes[1].name];
    await applyDeployFiles(admin, ['node-isolation-policy.yaml']);
    hold = await holdFleetRbac(admin, `node-isolation-${run}`);
    adminCustom = admin.makeApiClient(k8s.CustomObjectsApi);
    const agentPod = (await daemonSetAgent(admin, nodeA)).pod;
    const tr = await core.createNamespacedServiceAccountToken({
      name: 'inplace-agent',
      namespace: AGENT_DS.namespace,
      body: { spec: { audiences: [], expirationSeconds: 600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: agentPod.metadata?.name, uid: agentPod.metadata?.uid } } },
    });
    const agent = tokenConfig(admin, AGENT_USER, tr.status?.token ?? '');
    agentCore = agent.makeApiClient(k8s.CoreV1Api);
    agentCustom = agent.makeApiClient(k8s.CustomObjectsApi);
    const who = await agent.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    assert.equal(who.status?.userInfo?.username, AGENT_USER);
    assert.deepEqual(who.status?.userInfo?.extra?.[NODE_EXTRA], [nodeA], 'the API server names the bound pod\'s node in the token\'s user');

    ns = await createNamespace(admin, 'niso');
    for (const [name, nodeName] of [['a', nodeA], ['b', nodeB]]) {
      await core.createNamespacedPod({
        namespace: ns,
        body: { metadata: { name }, spec: { nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: env.sandbox.images.appV1, args: ['sh', '-c', TRAP_TERM_APP] }] } },
      });
    }
    // The policy is in force once a dry-run image patch of node B's pod is refused by it.
    await until(`${POLICY} in force`, 60_000, async () => ((await refusal(patchPod('b', imagePatch(env.sandbox.images.appV2), 'All')))?.message.includes(POLICY) ? true : undefined));
  });

  after(async () => {
    await adminCustom?.deleteClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, name: `niso-${run}` }).catch(() => undefined);
    if (ns) await deleteNamespace(admin, ns);
    await hold?.release();
  });

  it("node B's pod: an image patch and a status write are refused by the policy; relabelling it (the rollout's relabel) passes", async () => {
    const image = await refusal(patchPod('b', imagePatch(env.sandbox.images.appV2)));
    assert.equal(image?.code, 403, `refused: ${JSON.stringify(image)}`);
    assert.match(image.message, new RegExp(`ValidatingAdmissionPolicy '${POLICY}'.*the agent on node ${nodeA} may not write pods of Pod ${ns}/b, which is on node ${nodeB}`));
    const status = await refusal(patchPodStatus('b', { status: { conditions: [{ type: 'inplace-agent.io/test', status: 'True' }] } }));
    assert.equal(status?.code, 403);
    assert.match(status.message, new RegExp(`may not write pods/status of Pod ${ns}/b`));
    const pod = await core.readNamespacedPod({ namespace: ns, name: 'b' });
    assert.equal(pod.spec?.containers[0].image, env.sandbox.images.appV1, 'the image of node B\'s pod is unchanged');
    assert.equal(pod.status?.conditions?.some((c) => c.type === 'inplace-agent.io/test'), false);
    await patchPod('b', { metadata: { labels: { 'controller-revision-hash': `rev-${run}` } } });
    assert.equal((await core.readNamespacedPod({ namespace: ns, name: 'b' })).metadata?.labels?.['controller-revision-hash'], `rev-${run}`);
  });

  it("node A's own pod: the same image patch and status write succeed", async () => {
    await patchPod('a', imagePatch(env.sandbox.images.appV2));
    await patchPodStatus('a', { status: { conditions: [{ type: 'inplace-agent.io/test', status: 'True' }] } });
    const pod = await core.readNamespacedPod({ namespace: ns, name: 'a' });
    assert.equal(pod.spec?.containers[0].image, env.sandbox.images.appV2);
    assert.equal(pod.status?.conditions?.find((c) => c.type === 'inplace-agent.io/test')?.status, 'True');
  });

  it("NodePrewarms: creating node B's or a made-up one, and writing node B's status, are refused; node A's own succeed", async () => {
    for (const name of [nodeB, `npw-${run}`]) {
      const body = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'NodePrewarm', metadata: { name }, spec: { nodeName: name } };
      const r = await refusal(agentCustom.createClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, body }));
      assert.equal(r?.code, 403, `create ${name}: ${JSON.stringify(r)}`);
      assert.match(r.message, new RegExp(`${POLICY}.*may write only its own NodePrewarm, not ${name}`));
    }
    // A NodePrewarm that names node A in spec.nodeName under another node's name is refused too.
    const lying = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'NodePrewarm', metadata: { name: nodeB }, spec: { nodeName: nodeA } };
    assert.equal((await refusal(agentCustom.createClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, body: lying })))?.code, 403);

    await ensureRecord(adminCustom, nodeB); // what node B's agent makes on its first record
    const theirs = await rewriteRecord(nodeB);
    assert.equal(theirs?.code, 403, `status of ${nodeB}: ${JSON.stringify(theirs)}`);
    assert.match(theirs.message, new RegExp(`${POLICY}.*may write only its own NodePrewarm, not ${nodeB}`));

    await ensureRecord(agentCustom, nodeA);
    assert.equal(await rewriteRecord(nodeA), undefined, "node A's agent writes its own record");
  });

  it("a ContainerRestart's status naming node B is refused", async () => {
    const cr = containerRestart(ns, `ghost-${run}`, { podName: 'ghost', containers: [{ name: 'app' }] });
    await adminCustom.createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, body: cr });
    const cur = (await adminCustom.getNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, name: `ghost-${run}` })) as object;
    const r = await refusal(agentCustom.replaceNamespacedCustomObjectStatus({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, name: `ghost-${run}`, body: { ...cur, status: { nodeName: nodeB } } }));
    assert.equal(r?.code, 403, JSON.stringify(r));
    assert.match(r.message, new RegExp(`${POLICY}.*may not write the status of ContainerRestart ${ns}/ghost-${run}, which names node ${nodeB}`));
  });

  it("an ImagePrewarm's summary is written only under the writer's own node name", async () => {
    const ops = { group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, name: `niso-${run}` };
    // It selects no node, so no agent summarizes it.
    const body = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'ImagePrewarm', metadata: { name: ops.name }, spec: { images: [env.sandbox.images.appV1], nodeSelector: { 'inplace-test/none': run } } };
    await adminCustom.createClusterCustomObject({ ...ops, body });
    const cur = (await adminCustom.getClusterCustomObject(ops)) as ImagePrewarm;
    const summary = (by: string) => ({ ...cur, status: { desired: 0, succeeded: 0, failed: 0, pulling: 0, waiting: 0, failedNodes: [], summarizedBy: by } });
    const r = await refusal(agentCustom.replaceClusterCustomObjectStatus({ ...ops, body: summary(nodeB) }));
    assert.equal(r?.code, 403, JSON.stringify(r));
    assert.match(r.message, new RegExp(`${POLICY}.*may write the summary of ImagePrewarm niso-${run} only as its summarizer`));
    await agentCustom.replaceClusterCustomObjectStatus({ ...ops, body: summary(nodeA) });
  });
});
