// A table of hostile ContainerRestart and ImagePrewarm objects on the real cluster, with deploy/'s admission
// policies and the DaemonSet's agent. Each must be refused: by the API server at admission (the CRD's schema or
// CEL rules: 422; the admission policy: 403), or by the agent with a Failed status, a reason and a message that
// says why. Every pod named stays as it was: its spec's images, its running containers and their restart counts.
// Most objects are created by the admin, who holds every right, so that nothing but the rule under test stops
// them; the rows about rights are created by users holding exactly what the row needs.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { isRefusal } from '../../src/engine/reasons.js';
import { selfRequester } from '../../src/k8s/requester.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { applyCrds, deleteNodes, ensureNode } from '../support/kube-apply.js';
import { applyCrd, createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { applyDeployFiles, deleteClusterRules, failure, POLICY_FILES, until, userWithRules, type TestUser } from '../support/kube-users.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = kubeEnv();
const AGENT_NS = 'inplace-system';
const APP = `trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`;
const STATIC_DIR = path.join(process.env.INPLACE_KUBE_DIR ?? '/tmp/inplace-kube', 'kube', 'static-pods');
const KB10 = 'a'.repeat(10 * 1024);
const DIGEST = 'a'.repeat(64);

/** Where a row must be stopped. */
type Stop = 'schema' | 'policy' | 'agent';
type Who = 'admin' | 'createOnly' | 'otherNs' | 'warmer';

/** One hostile object: who creates it, where it must be stopped, and what the refusal must say. */
interface Row {
  what: string;
  who: Who;
  stop: Stop;
  says: RegExp;
  /** A ContainerRestart spec (in the test's namespace unless ns says otherwise), or an ImagePrewarm spec. */
  cr?: Record<string, unknown>;
  ns?: 'agent';
  prewarm?: Record<string, unknown>;
}

const web = (spec: Record<string, unknown>) => ({ podName: 'web', containers: [{ name: 'app' }], ...spec });
/**
 * At a bound the schema accepts the value; a container the pod lacks then has the agent refuse it, so nothing runs
 * (or an earlier refusal of the agent's own, about the value itself: the image's length, the time the grace needs).
 */
const atBound = (spec: Record<string, unknown>) => {
  const containers = (spec.containers as { name: string }[] | undefined) ?? [{ name: 'app' }];
  return web({ ...spec, containers: containers.length < 32 ? [...containers, { name: 'not-in-the-pod' }] : containers });
};
const NOT_IN_POD = /container "(not-in-the-pod|c0)" not found in pod|cannot hold \d+ containers? ×|invalid image reference/;
const pw = (spec: Record<string, unknown>) => ({ images: ['registry.local/app:1'], nodeSelector: { 'inplace-test/none': 'x' }, ...spec });

const ROWS: Row[] = [
  // pod names: paths, other namespaces, oversized
  { what: 'pod name that is a relative path', who: 'admin', stop: 'schema', cr: web({ podName: '../kube-system/etcd' }), says: /spec\.podName.*should match/ },
  { what: 'pod name namespace/name', who: 'admin', stop: 'schema', cr: web({ podName: 'kube-system/victim' }), says: /spec\.podName.*should match/ },
  { what: 'pod name that is an absolute path', who: 'admin', stop: 'schema', cr: web({ podName: '/etc/passwd' }), says: /spec\.podName.*should match/ },
  { what: 'pod name of 10 KB', who: 'admin', stop: 'schema', cr: web({ podName: KB10 }), says: /spec\.podName.*Too long/ },
  { what: 'pod name of 254 characters (bound + 1)', who: 'admin', stop: 'schema', cr: web({ podName: 'p'.repeat(254) }), says: /spec\.podName.*Too long/ },
  { what: 'empty pod name', who: 'admin', stop: 'schema', cr: web({ podName: '' }), says: /spec\.podName/ },
  { what: 'pod name with a NUL', who: 'admin', stop: 'schema', cr: web({ podName: 'web\u0000x' }), says: /spec\.podName.*should match/ },
  { what: "a pod of another namespace, by a user with rights only there", who: 'otherNs', stop: 'policy', cr: web({ podName: 'victim' }), says: /needs delete or patch on pods\/victim in namespace kbad-\w+, which user system:serviceaccount:kbad-\w+:other-ns may not do/ },
  // containers
  { what: 'a container named twice', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: 'app' }, { name: 'side' }, { name: 'app', image: 'registry.local/x:1' }] }), says: /container names must be unique/ },
  { what: '1,000 containers', who: 'admin', stop: 'schema', cr: web({ containers: Array.from({ length: 1000 }, (_, i) => ({ name: `c${i}` })) }), says: /spec\.containers.*Too many|must have at most 32 items/ },
  { what: '33 containers (bound + 1)', who: 'admin', stop: 'schema', cr: web({ containers: Array.from({ length: 33 }, (_, i) => ({ name: `c${i}` })) }), says: /spec\.containers.*Too many|must have at most 32 items/ },
  { what: 'no container', who: 'admin', stop: 'schema', cr: web({ containers: [] }), says: /spec\.containers.*at least 1 items/ },
  { what: 'container name of 64 characters (bound + 1)', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: 'c'.repeat(64) }] }), says: /spec\.containers\[0\]\.name.*Too long/ },
  { what: 'container name that is a path', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: '../app' }] }), says: /spec\.containers\[0\]\.name.*should match/ },
  { what: 'empty container name', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: '' }] }), says: /spec\.containers\[0\]\.name/ },
  { what: 'a container the pod does not have', who: 'admin', stop: 'agent', cr: web({ containers: [{ name: 'ghost' }] }), says: /ghost/ },
  // images
  { what: 'image URL with credentials', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: 'app', image: 'https://user:secret@registry.local/app:2' }] }), says: /must be an image reference/ },
  { what: 'image with user:password@ before the host', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: 'app', image: 'user:secret@registry.local/app:2' }] }), says: /must be an image reference/ },
  { what: 'image of 10 KB', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: 'app', image: `registry.local/${KB10}:1` }] }), says: /spec\.containers\[0\]\.image.*Too long/ },
  { what: 'image of 1,025 characters (bound + 1)', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: 'app', image: `r/${'i'.repeat(1021)}:1` }] }), says: /spec\.containers\[0\]\.image.*Too long/ },
  { what: 'image with a space', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: 'app', image: 'registry.local/app:1 --privileged' }] }), says: /must be an image reference/ },
  { what: 'image with a newline', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: 'app', image: 'registry.local/app:1\nlevel=error' }] }), says: /must be an image reference/ },
  { what: 'image with a short digest', who: 'admin', stop: 'schema', cr: web({ containers: [{ name: 'app', image: 'registry.local/app@sha256:abc' }] }), says: /must be an image reference/ },
  { what: 'image of 1,024 characters (at the bound)', who: 'admin', stop: 'agent', cr: atBound({ containers: [{ name: 'app', image: `r/${'i'.repeat(1020)}:1` }] }), says: /container app: invalid image reference .*1024 characters long/ },
  { what: 'image by digest (accepted form)', who: 'admin', stop: 'agent', cr: atBound({ containers: [{ name: 'app', image: `registry.local/app@sha256:${DIGEST}` }] }), says: NOT_IN_POD },
  // durations and every number at its bound and one past it
  { what: 'gracePeriodSeconds -1', who: 'admin', stop: 'schema', cr: web({ strategy: { gracePeriodSeconds: -1 } }), says: /gracePeriodSeconds.*greater than or equal to 0/ },
  { what: 'gracePeriodSeconds 3601', who: 'admin', stop: 'schema', cr: web({ strategy: { gracePeriodSeconds: 3601 } }), says: /gracePeriodSeconds.*less than or equal to 3600/ },
  { what: 'gracePeriodSeconds 1e18', who: 'admin', stop: 'schema', cr: web({ strategy: { gracePeriodSeconds: 1e18 } }), says: /gracePeriodSeconds.*less than or equal to 3600/ },
  { what: 'gracePeriodSeconds 1.5', who: 'admin', stop: 'schema', cr: web({ strategy: { gracePeriodSeconds: 1.5 } }), says: /gracePeriodSeconds.*integer/ },
  { what: 'gracePeriodSeconds as a string', who: 'admin', stop: 'schema', cr: web({ strategy: { gracePeriodSeconds: '30' } }), says: /gracePeriodSeconds.*integer/ },
  { what: 'gracePeriodSeconds 0 (at the bound)', who: 'admin', stop: 'agent', cr: atBound({ strategy: { gracePeriodSeconds: 0 } }), says: NOT_IN_POD },
  { what: 'gracePeriodSeconds 3600 (at the bound)', who: 'admin', stop: 'agent', cr: atBound({ strategy: { gracePeriodSeconds: 3600 } }), says: NOT_IN_POD },
  { what: 'drainSeconds -1', who: 'admin', stop: 'schema', cr: web({ strategy: { drainSeconds: -1 } }), says: /drainSeconds.*greater than or equal to 0/ },
  { what: 'drainSeconds 601', who: 'admin', stop: 'schema', cr: web({ strategy: { drainSeconds: 601 } }), says: /drainSeconds.*less than or equal to 600/ },
  { what: 'drainSeconds 600 (at the bound)', who: 'admin', stop: 'agent', cr: atBound({ strategy: { drainSeconds: 600 } }), says: NOT_IN_POD },
  { what: 'minReadySeconds -1', who: 'admin', stop: 'schema', cr: web({ strategy: { minReadySeconds: -1 } }), says: /minReadySeconds.*greater than or equal to 0/ },
  { what: 'minReadySeconds 3601', who: 'admin', stop: 'schema', cr: web({ strategy: { minReadySeconds: 3601 } }), says: /minReadySeconds.*less than or equal to 3600/ },
  { what: 'minReadySeconds 3600 (at the bound)', who: 'admin', stop: 'agent', cr: atBound({ strategy: { minReadySeconds: 3600 } }), says: NOT_IN_POD },
  { what: 'activeDeadlineSeconds 0', who: 'admin', stop: 'schema', cr: web({ activeDeadlineSeconds: 0 }), says: /activeDeadlineSeconds.*greater than or equal to 1/ },
  { what: 'activeDeadlineSeconds -86400', who: 'admin', stop: 'schema', cr: web({ activeDeadlineSeconds: -86400 }), says: /activeDeadlineSeconds.*greater than or equal to 1/ },
  { what: 'activeDeadlineSeconds 86401', who: 'admin', stop: 'schema', cr: web({ activeDeadlineSeconds: 86401 }), says: /activeDeadlineSeconds.*less than or equal to 86400/ },
  { what: 'activeDeadlineSeconds 1 (at the bound)', who: 'admin', stop: 'agent', cr: atBound({ activeDeadlineSeconds: 1 }), says: NOT_IN_POD },
  { what: 'activeDeadlineSeconds 86400 (at the bound)', who: 'admin', stop: 'agent', cr: atBound({ activeDeadlineSeconds: 86400 }), says: NOT_IN_POD },
  { what: 'ttlSecondsAfterFinished -1', who: 'admin', stop: 'schema', cr: web({ ttlSecondsAfterFinished: -1 }), says: /ttlSecondsAfterFinished.*greater than or equal to 0/ },
  { what: 'ttlSecondsAfterFinished 2592001', who: 'admin', stop: 'schema', cr: web({ ttlSecondsAfterFinished: 2592001 }), says: /ttlSecondsAfterFinished.*less than or equal to 2592000/ },
  { what: 'ttlSecondsAfterFinished 2592000 (at the bound)', who: 'admin', stop: 'agent', cr: atBound({ ttlSecondsAfterFinished: 2592000 }), says: NOT_IN_POD },
  { what: 'unclaimedTTLSeconds 0', who: 'admin', stop: 'schema', cr: web({ unclaimedTTLSeconds: 0 }), says: /unclaimedTTLSeconds.*greater than or equal to 1/ },
  { what: 'unclaimedTTLSeconds 604801', who: 'admin', stop: 'schema', cr: web({ unclaimedTTLSeconds: 604801 }), says: /unclaimedTTLSeconds.*less than or equal to 604800/ },
  { what: 'unclaimedTTLSeconds 604800 (at the bound)', who: 'admin', stop: 'agent', cr: atBound({ unclaimedTTLSeconds: 604800 }), says: NOT_IN_POD },
  { what: 'failurePolicy Retry', who: 'admin', stop: 'schema', cr: web({ strategy: { failurePolicy: 'Retry' } }), says: /failurePolicy.*Unsupported value: "Retry"/ },
  { what: '32 containers (at the bound)', who: 'admin', stop: 'agent', cr: atBound({ containers: Array.from({ length: 32 }, (_, i) => ({ name: `c${i}` })) }), says: NOT_IN_POD },
  // the requester
  // A requester sent by the client is replaced at admission by the real one (checked for every row the agent refuses).
  { what: 'requester of 65 groups (replaced at admission)', who: 'admin', stop: 'agent', cr: atBound({ requester: { username: 'x', groups: Array.from({ length: 65 }, (_, i) => `g${i}`) } }), says: NOT_IN_POD },
  { what: 'requester with a forged extra (replaced at admission)', who: 'admin', stop: 'agent', cr: atBound({ requester: { username: 'x', extra: { 'scopes.example.com/role': ['cluster-admin'] } } }), says: NOT_IN_POD },
  { what: 'requester name of 10 KB (replaced at admission)', who: 'admin', stop: 'agent', cr: atBound({ requester: { username: KB10 } }), says: NOT_IN_POD },
  { what: 'requester forged as the admin, image change by a user who may only create', who: 'createOnly', stop: 'policy', cr: web({ containers: [{ name: 'app', image: 'registry.local/app:2' }], requester: { username: 'admin', groups: ['system:masters'] } }), says: /needs patch on pods\/web/ },
  { what: 'restart by a user who may only create', who: 'createOnly', stop: 'policy', cr: web({}), says: /needs delete or patch on pods\/web/ },
  // pods the agent must not touch
  { what: 'a static pod (its spec is a file on the node)', who: 'admin', stop: 'agent', cr: { podName: 'STATIC', containers: [{ name: 'app', image: 'registry.local/app:2' }] }, says: /is a static pod/ },
  { what: 'a static pod, restart only, without allowStaticPod', who: 'admin', stop: 'agent', cr: { podName: 'STATIC', containers: [{ name: 'app' }] }, says: /is a static pod .*spec\.allowStaticPod/ },
  { what: "the agent's own pod", who: 'admin', stop: 'agent', ns: 'agent', cr: { podName: 'AGENT', containers: [{ name: 'agent' }], strategy: { ordered: false } }, says: /agent's own pod/ },
  // ImagePrewarm
  { what: 'prewarm: image URL with credentials', who: 'admin', stop: 'schema', prewarm: pw({ images: ['https://user:secret@registry.local/app:1'] }), says: /must be an image reference/ },
  { what: 'prewarm: image user:password@host', who: 'admin', stop: 'schema', prewarm: pw({ images: ['user:secret@registry.local/app:1'] }), says: /must be an image reference/ },
  { what: 'prewarm: image of 10 KB', who: 'admin', stop: 'schema', prewarm: pw({ images: [`registry.local/${KB10}:1`] }), says: /Too long/ },
  { what: 'prewarm: 65 images (bound + 1)', who: 'admin', stop: 'schema', prewarm: pw({ images: Array.from({ length: 65 }, (_, i) => `registry.local/a${i}:1`) }), says: /spec\.images.*Too many|must have at most 64 items/ },
  { what: 'prewarm: 17 pull Secrets (bound + 1)', who: 'admin', stop: 'schema', prewarm: pw({ imagePullSecrets: Array.from({ length: 17 }, (_, i) => ({ namespace: 'default', name: `s${i}` })) }), says: /imagePullSecrets.*Too many|must have at most 16 items/ },
  { what: 'prewarm: a pull Secret named twice', who: 'admin', stop: 'schema', prewarm: pw({ imagePullSecrets: [{ namespace: 'default', name: 's' }, { namespace: 'default', name: 's' }] }), says: /imagePullSecrets\[1\].*Duplicate value/ },
  { what: 'prewarm: pull Secret namespace that is a path', who: 'admin', stop: 'schema', prewarm: pw({ imagePullSecrets: [{ namespace: '../kube-system', name: 's' }] }), says: /imagePullSecrets\[0\]\.namespace.*should match/ },
  { what: 'prewarm: maxParallelNodes 0', who: 'admin', stop: 'schema', prewarm: pw({ maxParallelNodes: 0 }), says: /maxParallelNodes.*greater than or equal to 1/ },
  { what: 'prewarm: maxParallelNodes 1001', who: 'admin', stop: 'schema', prewarm: pw({ maxParallelNodes: 1001 }), says: /maxParallelNodes.*less than or equal to 1000/ },
  { what: 'prewarm: seedNodes -1', who: 'admin', stop: 'schema', prewarm: pw({ seedNodes: -1 }), says: /seedNodes.*greater than or equal to 0/ },
  { what: 'prewarm: backoffLimit 101', who: 'admin', stop: 'schema', prewarm: pw({ backoffLimit: 101 }), says: /backoffLimit.*less than or equal to 100/ },
  { what: 'prewarm: activeDeadlineSeconds 0', who: 'admin', stop: 'schema', prewarm: pw({ activeDeadlineSeconds: 0 }), says: /activeDeadlineSeconds.*greater than or equal to 1/ },
  { what: 'prewarm: activeDeadlineSeconds 2592001', who: 'admin', stop: 'schema', prewarm: pw({ activeDeadlineSeconds: 2592001 }), says: /activeDeadlineSeconds.*less than or equal to 2592000/ },
  { what: 'prewarm: refreshSeconds 9', who: 'admin', stop: 'schema', prewarm: pw({ refreshSeconds: 9 }), says: /refreshSeconds is 0 \(never\) or at least 10/ },
  { what: 'prewarm: nodeSelector and podSelector together', who: 'admin', stop: 'schema', prewarm: pw({ podSelector: { namespace: 'default', matchLabels: { a: 'b' } } }), says: /nodeSelector and podSelector are exclusive/ },
  { what: "prewarm: a Secret of kube-system its creator cannot get", who: 'warmer', stop: 'policy', prewarm: pw({ imagePullSecrets: [{ namespace: 'kube-system', name: 'bootstrap-token-abcdef' }] }), says: /may not get all of secrets\/bootstrap-token-abcdef in namespace kube-system/ },
  { what: 'prewarm: podSelector in a namespace whose pods its creator cannot list', who: 'warmer', stop: 'policy', prewarm: { images: ['registry.local/app:1'], podSelector: { namespace: 'kube-system', matchLabels: { a: 'b' } } }, says: /needs list on pods in namespace kube-system/ },
];

describe('hostile request objects: each refused at admission or by the agent, every pod unchanged (real cluster)', function () {
  this.timeout(300_000);
  const admin = new k8s.KubeConfig();
  let core: k8s.CoreV1Api;
  let crs: ContainerRestartApi;
  let ns = '';
  let otherNs = '';
  const users: Partial<Record<Who, TestUser>> = {};
  const run = randomBytes(3).toString('hex');
  const staticName = `sec-static-${run}`;
  const staticFile = path.join(STATIC_DIR, `${staticName}.yaml`);
  let staticPod = '';
  let agentPod = '';
  const farNode = `sec-far-${run}`;

  const isReady = (p: k8s.V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const state = (p: k8s.V1Pod) =>
    JSON.stringify({
      uid: p.metadata?.uid,
      images: p.spec?.containers.map((c) => `${c.name}=${c.image}`),
      running: (p.status?.containerStatuses ?? []).map((s) => `${s.name}:${s.containerID}:${s.restartCount}`).sort(),
    });
  const snapshot = async () => {
    const pods: [string, string][] = [[ns, 'web'], [otherNs, 'victim'], [ns, staticPod], [AGENT_NS, agentPod]];
    return Promise.all(pods.map(async ([n, name]) => `${n}/${name} ${state(await core.readNamespacedPod({ namespace: n, name }))}`));
  };

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet Ready on node ${env.nodeName} (scripts/kube-deploy-agent), static pods in ${STATIC_DIR}`, async () => {
      admin.loadFromFile(env.kubeconfig);
      core = admin.makeApiClient(k8s.CoreV1Api);
      const pods = await core.listNamespacedPod({ namespace: AGENT_NS, fieldSelector: `spec.nodeName=${env.nodeName}`, labelSelector: 'app.kubernetes.io/name=inplace-agent' });
      const mine = pods.items.find((p) => !p.metadata?.deletionTimestamp && isReady(p));
      if (!mine) throw new Error(`no Ready pod of the DaemonSet on ${env.nodeName}`);
      agentPod = mine.metadata?.name ?? '';
      await fs.access(STATIC_DIR);
    });
    // This checkout's CRD, the agent's RBAC and the policies (other suites may have applied older ones to the shared cluster).
    await applyCrd(admin);
    await applyDeployFiles(admin, ['rbac.yaml', ...POLICY_FILES]);
    await applyCrds(admin, ['imageprewarm.yaml', 'nodeprewarm.yaml']);
    crs = new ContainerRestartApi(admin);
    ns = await createNamespace(admin, 'kbad');
    otherNs = await createNamespace(admin, 'kbad-other');
    const CR_CREATE = { apiGroups: [CR_GROUP], resources: [CR_PLURAL], verbs: ['create'] };
    users.createOnly = await userWithRules(admin, ns, 'create-only', [CR_CREATE]);
    users.otherNs = await userWithRules(admin, ns, 'other-ns', [CR_CREATE]);
    const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({ namespace: otherNs, body: { metadata: { name: 'pods' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['patch', 'delete'] }] } });
    await rbac.createNamespacedRoleBinding({ namespace: otherNs, body: { metadata: { name: 'pods' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pods' }, subjects: [{ kind: 'ServiceAccount', name: 'other-ns', namespace: ns }] } });
    users.warmer = await userWithRules(admin, ns, 'warmer', [], [{ apiGroups: [CR_GROUP], resources: ['imageprewarms'], verbs: ['create'] }]);
    const pod = (name: string, namespace: string, nodeName: string): k8s.V1Pod => ({
      metadata: { name, namespace },
      spec: { nodeName, terminationGracePeriodSeconds: 5, containers: ['app', 'side'].map((c) => ({ name: c, image: env.sandbox.images.appV1, args: ['sh', '-c', APP] })) },
    });
    await core.createNamespacedPod({ namespace: ns, body: pod('web', ns, env.nodeName) });
    await core.createNamespacedPod({ namespace: otherNs, body: pod('victim', otherNs, env.nodeName) });
    // The static pod: a manifest the kubelet reads; its mirror pod in the API server is named NAME-NODE.
    await fs.writeFile(staticFile, JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: staticName, namespace: ns }, spec: { ...pod(staticName, ns, env.nodeName).spec, nodeName: undefined } }));
    staticPod = `${staticName}-${env.nodeName}`;
    await ensureNode(admin, farNode, {});
    await core.createNamespacedPod({ namespace: ns, body: pod('far', ns, farNode) });
    for (const [n, name] of [[ns, 'web'], [otherNs, 'victim'], [ns, staticPod]]) {
      await until(`pod ${n}/${name} Ready`, 90_000, async () => ((p) => (p && isReady(p) ? true : undefined))(await core.readNamespacedPod({ namespace: n, name }).catch(() => undefined)));
    }
  });

  after(async () => {
    await fs.rm(staticFile, { force: true });
    for (const n of [ns, otherNs]) if (n) await deleteNamespace(admin, n);
    if (ns) await deleteClusterRules(admin, ns);
    await deleteNodes(admin, [farNode]);
  });

  it(`has at least 50 rows (${ROWS.length})`, () => {
    assert.ok(ROWS.length >= 50, `${ROWS.length} rows`);
  });

  it('refuses every row where the table says, with a message that says why; no pod changes', async () => {
    const before = await snapshot();
    const adminName = (await selfRequester(admin)).username;
    const pending: [Row, string, string][] = [];
    const outcomes: string[] = [];
    for (const [i, row] of ROWS.entries()) {
      const user = row.who === 'admin' ? undefined : users[row.who];
      const kc = user?.kc ?? admin;
      const custom = kc.makeApiClient(k8s.CustomObjectsApi);
      const name = `h${i}-${run}`;
      let refused: { code: number; message: string } | undefined;
      let where = ns;
      if (row.prewarm) {
        const body = { apiVersion: `${CR_GROUP}/v1alpha1`, kind: 'ImagePrewarm', metadata: { name }, spec: row.prewarm };
        refused = await custom.createClusterCustomObject({ group: CR_GROUP, version: 'v1alpha1', plural: 'imageprewarms', body }).then(() => undefined, failure);
        if (!refused) await admin.makeApiClient(k8s.CustomObjectsApi).deleteClusterCustomObject({ group: CR_GROUP, version: 'v1alpha1', plural: 'imageprewarms', name });
      } else {
        const spec = { ...row.cr } as unknown as ContainerRestart['spec'];
        if ((spec.podName as string) === 'STATIC') spec.podName = staticPod;
        if ((spec.podName as string) === 'AGENT') spec.podName = agentPod;
        where = row.ns === 'agent' ? AGENT_NS : ns;
        refused = await custom.createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: where, body: containerRestart(where, name, spec) }).then(() => undefined, failure);
      }
      const expect = row.stop === 'schema' ? 422 : row.stop === 'policy' ? 403 : undefined;
      if (expect) {
        // Accepted by mistake: taken away at once, before an agent can act on it, then reported.
        if (!refused && row.cr) await crs.delete(where, name).catch(() => undefined);
        assert.equal(refused?.code, expect, `${row.what}: expected ${expect} (${row.stop}), got ${JSON.stringify(refused)}`);
        assert.match(refused.message, row.says, row.what);
        if (row.stop === 'policy') assert.match(refused.message, /ValidatingAdmissionPolicy 'inplace-agent-(containerrestart|imageprewarm)'/, row.what);
        outcomes.push(`${row.stop}: ${row.what}`);
      } else {
        assert.equal(refused, undefined, `${row.what}: must reach the agent, but the API server refused it: ${JSON.stringify(refused)}`);
        pending.push([row, where, name]);
      }
    }
    // A request for a pod of another node is left to that node's agent; the sentinel after it is this agent's sign
    // that it has gone past it.
    await crs.create(containerRestart(ns, `far-${run}`, { podName: 'far', containers: [{ name: 'app', image: 'registry.local/app:2' }] }));
    await crs.create(containerRestart(ns, `sentinel-${run}`, { podName: 'web', containers: [{ name: 'ghost' }] }));
    for (const [row, where, name] of pending) {
      const done = await waitForStatus(crs, where, name, (cr) => cr.status?.phase === 'Failed' || cr.status?.phase === 'Succeeded', 60_000);
      assert.equal(done.status?.phase, 'Failed', `${row.what}: ${JSON.stringify(done.status)}`);
      assert.equal(done.spec.requester?.username, adminName, `${row.what}: the requester is the user who created it`);
      const cond = done.status?.conditions?.find((c) => c.type === 'Succeeded');
      // The condition's reason is the refusal's own reason constant, the same word as the status's.
      assert.ok(isRefusal(cond?.reason) && cond?.reason === done.status?.reason, `${row.what}: reason ${cond?.reason} (status ${done.status?.reason})`);
      assert.match(done.status?.message ?? '', row.says, `${row.what}: ${done.status?.message}`);
      assert.equal(done.status?.containers?.some((c) => c.newContainerID), undefined, `${row.what}: no container was recreated`);
      outcomes.push(`agent (${cond?.reason}): ${row.what}`);
      await crs.delete(where, name);
    }
    await waitForStatus(crs, ns, `sentinel-${run}`, (cr) => cr.status?.phase === 'Failed', 60_000);
    assert.equal((await crs.get(ns, `far-${run}`)).status, undefined, "this node's agent left the other node's pod alone");
    assert.deepEqual(await snapshot(), before, 'every pod as it was');
    assert.equal(outcomes.length, ROWS.length);
  });
});
