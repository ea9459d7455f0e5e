// Hostile objects at the bounds issue 28 set (finding 4, "bounds that hold end to end"), on the real cluster with
// deploy/'s CRDs and admission policies: each limit of the ContainerRestart, InPlaceRollout, ImagePrewarm and
// SidecarSet CRDs at its edge (accepted) and one past it (refused, the API server's message asserted), and the
// rules keyed on the writer (a forged requester replaced, pin and allowStaticPod without their verbs, a SidecarSet
// by a user who may not patch every pod). Every row is a server-side dry run (dryRun=All: the schema, the CEL
// rules and the admission policies all run, nothing is stored, so no agent acts on it).
// Then a rollout with every field at its edge makes its ContainerRestart on the cluster: the API server takes it,
// and the rollout's status is written (issue 28: "a valid rollout can never produce an invalid ContainerRestart or
// status"). Its pod is bound to a Node object of the test's own that no kubelet runs, so nothing is restarted.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL } from '../../src/controllers/image-prewarm/types.js';
import { ownedBy } from '../../src/controllers/rollout/ownership.js';
import { restartName } from '../../src/controllers/rollout/plan.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, type InPlaceRollout } from '../../src/controllers/rollout/types.js';
import { SCS_GROUP, SCS_PLURAL, SCS_VERSION } from '../../src/controllers/sidecarset/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { applyCrds, deleteNodes, ensureNode } from '../support/kube-apply.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { applyDeployFiles, deleteClusterRules, failure, POLICY_FILES, until, userWithRules, type TestUser } from '../support/kube-users.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = kubeEnv();
const DIGEST = 'a'.repeat(64);
const n = (c: string, len: number) => c.repeat(len);
/** A DNS-subdomain name of exactly len characters. */
const longName = (len: number) => `${n('a', len - 2)}-z`;

type Kind = 'ContainerRestart' | 'InPlaceRollout' | 'ImagePrewarm' | 'SidecarSet';
type Who = 'admin' | 'restarter' | 'roller' | 'warmer' | 'injector';

/** One hostile object: accepted at its edge (ok), or refused one past it (status and message). */
interface Row {
  what: string;
  kind: Kind;
  spec: Record<string, unknown>;
  name?: string;
  who?: Who;
  /** Refused: the HTTP status (422 schema or CEL rule, 403 admission policy) and what the message must say. */
  refused?: [number, RegExp];
  /** Accepted: a check of the object the API server answers with. */
  check?: (obj: { spec: Record<string, unknown> }, users: Partial<Record<Who, TestUser>>) => void;
}

const cr = (spec: Record<string, unknown>) => ({ podName: 'web', containers: [{ name: 'app' }], ...spec });
const ipr = (spec: Record<string, unknown>) => ({ targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' }, prewarm: false, ...spec });
const ipw = (spec: Record<string, unknown>) => ({ images: ['registry.local/app:1'], nodeSelector: { 'inplace-test/none': 'x' }, ...spec });
const scs = (spec: Record<string, unknown>) => ({ selector: { matchLabels: { 'inplace-test/none': 'x' } }, containers: [{ name: 'side', image: 'registry.local/side:1' }], ...spec });
const side = (i: number) => ({ name: `side${i}`, image: 'registry.local/side:1' });
const labels = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 'v']));
const exprs = (count: number) => Array.from({ length: count }, (_, i) => ({ key: `k${i}`, operator: 'Exists' }));
const TOO_LONG = /Too long|may not be more than|must have at most/;
const TOO_MANY = /Too many|must have at most/;
const NOT_REF = /must be an image reference/;
const PCT = /an integer of at least 1, or a percent from 1% to 100%/;
const SUM = /strategy\.minReadySeconds \+ progressDeadlineSeconds must be at most 86400/;
const requesterIs = (who: Who) => (obj: { spec: Record<string, unknown> }, users: Partial<Record<Who, TestUser>>) =>
  assert.equal((obj.spec.requester as { username?: string } | undefined)?.username, users[who]?.username, 'the requester is the writing user, not the forged one');
const FORGED = { username: 'system:admin', groups: ['system:masters'], extra: { 'scopes.example.com/role': ['cluster-admin'] } };

const ROWS: Row[] = [
  // ContainerRestart: the names and shapes a rollout's requests take, and the writer's rules
  { what: 'name of 253 characters (the longest a rollout makes)', kind: 'ContainerRestart', name: longName(253), spec: cr({}) },
  { what: 'name of 254 characters', kind: 'ContainerRestart', name: longName(254), spec: cr({}), refused: [422, /metadata\.name.*must be no more than 253 characters/] },
  { what: 'unclaimedTTLSeconds 1 (lower edge)', kind: 'ContainerRestart', spec: cr({ unclaimedTTLSeconds: 1 }) },
  { what: 'container name of 63 characters', kind: 'ContainerRestart', spec: cr({ containers: [{ name: n('c', 63) }] }) },
  { what: 'image host:port/path:tag@sha256:digest', kind: 'ContainerRestart', spec: cr({ containers: [{ name: 'app', image: `registry.local:5000/team/app:1.2@sha256:${DIGEST}` }] }) },
  { what: 'image with a sha512 digest', kind: 'ContainerRestart', spec: cr({ containers: [{ name: 'app', image: `registry.local/app@sha512:${n('a', 128)}` }] }), refused: [422, NOT_REF] },
  { what: 'image starting with a capital', kind: 'ContainerRestart', spec: cr({ containers: [{ name: 'app', image: 'Registry.local/app:1' }] }), refused: [422, NOT_REF] },
  { what: 'image starting with a dash', kind: 'ContainerRestart', spec: cr({ containers: [{ name: 'app', image: '-registry.local/app:1' }] }), refused: [422, NOT_REF] },
  { what: 'requester forged as system:masters with an extra, by a user who may patch the pod', kind: 'ContainerRestart', who: 'restarter', spec: cr({ containers: [{ name: 'app', image: 'registry.local/app:2' }], requester: FORGED }), check: requesterIs('restarter') },
  { what: 'allowStaticPod without restart-static', kind: 'ContainerRestart', who: 'restarter', spec: cr({ allowStaticPod: true }), refused: [403, /allowStaticPod needs restart-static on containerrestarts\.inplace-agent\.io in namespace \S+, which user system:serviceaccount:\S+:restarter may not do/] },
  // InPlaceRollout: names, the deadline sum a ContainerRestart must take, the strategy's bounds, maxUnavailable forms
  { what: 'rollout name of 253 characters', kind: 'InPlaceRollout', name: longName(253), spec: ipr({}) },
  { what: 'rollout name of 254 characters', kind: 'InPlaceRollout', name: longName(254), spec: ipr({}), refused: [422, /metadata\.name.*must be no more than 253 characters/] },
  { what: 'targetRef.name of 253 characters', kind: 'InPlaceRollout', spec: ipr({ targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: longName(253) } }) },
  { what: 'targetRef.name of 254 characters', kind: 'InPlaceRollout', spec: ipr({ targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: longName(254) } }), refused: [422, TOO_LONG] },
  { what: 'targetRef.name with capitals and an underscore', kind: 'InPlaceRollout', spec: ipr({ targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'Web_1' } }), refused: [422, /targetRef\.name.*should match/] },
  { what: 'progressDeadlineSeconds 1', kind: 'InPlaceRollout', spec: ipr({ progressDeadlineSeconds: 1 }) },
  { what: 'progressDeadlineSeconds 0', kind: 'InPlaceRollout', spec: ipr({ progressDeadlineSeconds: 0 }), refused: [422, /progressDeadlineSeconds.*greater than or equal to 1/] },
  { what: 'progressDeadlineSeconds 86401', kind: 'InPlaceRollout', spec: ipr({ progressDeadlineSeconds: 86_401 }), refused: [422, /progressDeadlineSeconds.*less than or equal to 86400/] },
  { what: 'minReadySeconds 3600 with the default deadline (600)', kind: 'InPlaceRollout', spec: ipr({ strategy: { minReadySeconds: 3600 } }) },
  { what: 'minReadySeconds 3601', kind: 'InPlaceRollout', spec: ipr({ strategy: { minReadySeconds: 3601 } }), refused: [422, /minReadySeconds.*less than or equal to 3600/] },
  { what: 'minReadySeconds 600 + progressDeadlineSeconds 85800 (86400)', kind: 'InPlaceRollout', spec: ipr({ progressDeadlineSeconds: 85_800, strategy: { minReadySeconds: 600 } }) },
  { what: 'minReadySeconds 600 + progressDeadlineSeconds 85801 (86401)', kind: 'InPlaceRollout', spec: ipr({ progressDeadlineSeconds: 85_801, strategy: { minReadySeconds: 600 } }), refused: [422, SUM] },
  { what: 'gracePeriodSeconds 3600', kind: 'InPlaceRollout', spec: ipr({ strategy: { gracePeriodSeconds: 3600 } }) },
  { what: 'gracePeriodSeconds 3601', kind: 'InPlaceRollout', spec: ipr({ strategy: { gracePeriodSeconds: 3601 } }), refused: [422, /gracePeriodSeconds.*less than or equal to 3600/] },
  { what: 'drainSeconds 600', kind: 'InPlaceRollout', spec: ipr({ strategy: { drainSeconds: 600 } }) },
  { what: 'drainSeconds 601', kind: 'InPlaceRollout', spec: ipr({ strategy: { drainSeconds: 601 } }), refused: [422, /drainSeconds.*less than or equal to 600/] },
  { what: 'maxUnavailable "100%"', kind: 'InPlaceRollout', spec: ipr({ maxUnavailable: '100%' }) },
  { what: 'maxUnavailable "1%"', kind: 'InPlaceRollout', spec: ipr({ maxUnavailable: '1%' }) },
  { what: 'maxUnavailable "025%"', kind: 'InPlaceRollout', spec: ipr({ maxUnavailable: '025%' }), refused: [422, PCT] },
  { what: 'maxUnavailable "25.5%"', kind: 'InPlaceRollout', spec: ipr({ maxUnavailable: '25.5%' }), refused: [422, PCT] },
  { what: 'maxUnavailable 1.5', kind: 'InPlaceRollout', spec: ipr({ maxUnavailable: 1.5 }), refused: [422, /maxUnavailable in body must be of type integer,string/] },
  { what: 'partition 1000000', kind: 'InPlaceRollout', spec: ipr({ partition: 1_000_000 }) },
  { what: 'partition 1000001', kind: 'InPlaceRollout', spec: ipr({ partition: 1_000_001 }), refused: [422, /partition.*less than or equal to 1000000/] },
  { what: 'partition -1', kind: 'InPlaceRollout', spec: ipr({ partition: -1 }), refused: [422, /partition.*greater than or equal to 0/] },
  { what: 'requester forged as system:masters, by a user who may patch the StatefulSet', kind: 'InPlaceRollout', who: 'roller', spec: ipr({ requester: FORGED }), check: requesterIs('roller') },
  { what: 'a StatefulSet its writer may not patch', kind: 'InPlaceRollout', who: 'roller', spec: ipr({ targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'other' } }), refused: [403, /needs patch on statefulsets\.apps\/other in namespace \S+, which user system:serviceaccount:\S+:roller may not do/] },
  // ImagePrewarm
  { what: 'prewarm: 64 images', kind: 'ImagePrewarm', spec: ipw({ images: Array.from({ length: 64 }, (_, i) => `registry.local/a${i}:1`) }) },
  { what: 'prewarm: image of 512 characters', kind: 'ImagePrewarm', spec: ipw({ images: [`r/${n('i', 508)}:1`] }) },
  { what: 'prewarm: image of 513 characters', kind: 'ImagePrewarm', spec: ipw({ images: [`r/${n('i', 509)}:1`] }), refused: [422, TOO_LONG] },
  { what: 'prewarm: pin by a user with the verb (admin)', kind: 'ImagePrewarm', spec: ipw({ pin: true }) },
  { what: 'prewarm: pin by a user with create imageprewarms only', kind: 'ImagePrewarm', who: 'warmer', spec: ipw({ pin: true }), refused: [403, /needs pin on imageprewarms\.inplace-agent\.io\/\S+, which user system:serviceaccount:\S+:warmer may not do/] },
  { what: 'prewarm: requester forged, by a user who may create', kind: 'ImagePrewarm', who: 'warmer', spec: ipw({ requester: FORGED }), check: requesterIs('warmer') },
  { what: 'prewarm: nodeSelector of 32 labels', kind: 'ImagePrewarm', spec: ipw({ nodeSelector: labels(32) }) },
  { what: 'prewarm: nodeSelector of 33 labels', kind: 'ImagePrewarm', spec: ipw({ nodeSelector: labels(33) }), refused: [422, TOO_MANY] },
  { what: 'prewarm: maxParallelNodes 1000, seedNodes 1000', kind: 'ImagePrewarm', spec: ipw({ maxParallelNodes: 1000, seedNodes: 1000 }) },
  { what: 'prewarm: seedNodes 1001', kind: 'ImagePrewarm', spec: ipw({ seedNodes: 1001 }), refused: [422, /seedNodes.*less than or equal to 1000/] },
  { what: 'prewarm: refreshSeconds 10', kind: 'ImagePrewarm', spec: ipw({ refreshSeconds: 10 }) },
  // SidecarSet
  { what: 'sidecarset: name of 63 characters', kind: 'SidecarSet', name: longName(63), spec: scs({}) },
  { what: 'sidecarset: name of 64 characters', kind: 'SidecarSet', name: longName(64), spec: scs({}), refused: [422, /a SidecarSet's name is at most 63 characters/] },
  { what: 'sidecarset: 8 containers', kind: 'SidecarSet', spec: scs({ containers: Array.from({ length: 8 }, (_, i) => side(i)) }) },
  { what: 'sidecarset: 9 containers', kind: 'SidecarSet', spec: scs({ containers: Array.from({ length: 9 }, (_, i) => side(i)) }), refused: [422, TOO_MANY] },
  { what: 'sidecarset: a name in containers and initContainers', kind: 'SidecarSet', spec: scs({ initContainers: [{ name: 'side', image: 'registry.local/side:1', restartPolicy: 'Always' }] }), refused: [422, /a name is used by both a container and an initContainer/] },
  { what: 'sidecarset: a container named twice', kind: 'SidecarSet', spec: scs({ containers: [side(1), side(1)] }), refused: [422, /Duplicate value/] },
  { what: 'sidecarset: a container named app', kind: 'SidecarSet', spec: scs({ containers: [{ name: 'app', image: 'registry.local/side:1' }] }), refused: [422, /would clash with the application containers/] },
  { what: 'sidecarset: a container named app with allowCommonNames', kind: 'SidecarSet', spec: scs({ allowCommonNames: true, containers: [{ name: 'app', image: 'registry.local/side:1' }] }) },
  { what: 'sidecarset: image of 512 characters', kind: 'SidecarSet', spec: scs({ containers: [{ name: 'side', image: `r/${n('i', 508)}:1` }] }) },
  { what: 'sidecarset: image of 513 characters', kind: 'SidecarSet', spec: scs({ containers: [{ name: 'side', image: `r/${n('i', 509)}:1` }] }), refused: [422, TOO_LONG] },
  { what: 'sidecarset: matchLabels of 32', kind: 'SidecarSet', spec: scs({ selector: { matchLabels: labels(32) } }) },
  { what: 'sidecarset: matchLabels of 33', kind: 'SidecarSet', spec: scs({ selector: { matchLabels: labels(33) } }), refused: [422, TOO_MANY] },
  { what: 'sidecarset: matchExpressions of 16', kind: 'SidecarSet', spec: scs({ selector: { matchExpressions: exprs(16) } }) },
  { what: 'sidecarset: matchExpressions of 17', kind: 'SidecarSet', spec: scs({ selector: { matchExpressions: exprs(17) } }), refused: [422, TOO_MANY] },
  { what: 'sidecarset: In without values', kind: 'SidecarSet', spec: scs({ selector: { matchExpressions: [{ key: 'k', operator: 'In' }] } }), refused: [422, /In and NotIn need values/] },
  { what: 'sidecarset: Exists with values', kind: 'SidecarSet', spec: scs({ selector: { matchExpressions: [{ key: 'k', operator: 'Exists', values: ['v'] }] } }), refused: [422, /Exists and DoesNotExist take none/] },
  { what: 'sidecarset: selector key of 317 characters', kind: 'SidecarSet', spec: scs({ selector: { matchExpressions: [{ key: `${n('d', 253)}/${n('k', 63)}`, operator: 'Exists' }] } }) },
  { what: 'sidecarset: selector key of 318 characters', kind: 'SidecarSet', spec: scs({ selector: { matchExpressions: [{ key: `${n('d', 254)}/${n('k', 63)}`, operator: 'Exists' }] } }), refused: [422, TOO_LONG] },
  { what: 'sidecarset: maxUnavailable "100%"', kind: 'SidecarSet', spec: scs({ updateStrategy: { maxUnavailable: '100%' } }) },
  { what: 'sidecarset: maxUnavailable 0', kind: 'SidecarSet', spec: scs({ updateStrategy: { maxUnavailable: 0 } }), refused: [422, PCT] },
  { what: 'sidecarset: by a user who may not patch every pod', kind: 'SidecarSet', who: 'injector', spec: scs({}), refused: [403, /writing one needs patch on pods in all namespaces, which user system:serviceaccount:\S+:injector may not do/] },
];

const API: Record<Kind, { group: string; plural: string; version: string; namespaced: boolean }> = {
  ContainerRestart: { group: CR_GROUP, plural: CR_PLURAL, version: CR_VERSION, namespaced: true },
  InPlaceRollout: { group: IPR_GROUP, plural: IPR_PLURAL, version: IPR_VERSION, namespaced: true },
  ImagePrewarm: { group: FLEET_GROUP, plural: IMAGE_PREWARM_PLURAL, version: FLEET_VERSION, namespaced: false },
  SidecarSet: { group: SCS_GROUP, plural: SCS_PLURAL, version: SCS_VERSION, namespaced: false },
};

describe('hostile objects at the bounds of issue 28: each limit at its edge and one past it (real cluster, dry runs)', function () {
  this.timeout(300_000);
  const admin = new k8s.KubeConfig();
  let ns = '';
  const users: Partial<Record<Who, TestUser>> = {};
  const run = randomBytes(3).toString('hex');
  const farNode = `bounds-far-${run}`;

  before(async function () {
    await requireRuntime(this, `the test cluster (${env.kubeconfig})`, async () => {
      admin.loadFromFile(env.kubeconfig);
      await admin.makeApiClient(k8s.CoreV1Api).readNode({ name: env.nodeName });
    });
    await applyCrds(admin, ['containerrestart.yaml', 'inplacerollout.yaml', 'imageprewarm.yaml', 'sidecarset.yaml']);
    await applyDeployFiles(admin, ['rbac.yaml', ...POLICY_FILES, 'prewarm-pin-policy.yaml']);
    ns = await createNamespace(admin, 'kbounds');
    users.restarter = await userWithRules(admin, ns, 'restarter', [
      { apiGroups: [CR_GROUP], resources: [CR_PLURAL], verbs: ['create'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['patch', 'delete'] },
    ]);
    users.roller = await userWithRules(admin, ns, 'roller', [
      { apiGroups: [IPR_GROUP], resources: [IPR_PLURAL], verbs: ['create'] },
      { apiGroups: ['apps'], resources: ['statefulsets'], resourceNames: ['web'], verbs: ['patch'] },
    ]);
    users.warmer = await userWithRules(admin, ns, 'warmer', [], [{ apiGroups: [FLEET_GROUP], resources: [IMAGE_PREWARM_PLURAL], verbs: ['create'] }]);
    users.injector = await userWithRules(admin, ns, 'injector', [], [{ apiGroups: [SCS_GROUP], resources: [SCS_PLURAL], verbs: ['create'] }]);
  });

  after(async () => {
    if (ns) {
      await deleteClusterRules(admin, ns);
      await deleteNamespace(admin, ns);
    }
    await deleteNodes(admin, [farNode]);
  });

  it(`has at least 30 rows, accepted and refused (${ROWS.length}: ${ROWS.filter((r) => !r.refused).length} at an edge, ${ROWS.filter((r) => r.refused).length} past one)`, () => {
    assert.ok(ROWS.length >= 30);
    for (const k of Object.keys(API)) assert.ok(ROWS.some((r) => r.kind === k && r.refused) && ROWS.some((r) => r.kind === k && !r.refused), `${k}: an edge and a refusal`);
  });

  it('takes every row at its edge and refuses every row past it, with the message that says why (nothing stored)', async () => {
    const wrong: string[] = [];
    for (const [i, row] of ROWS.entries()) {
      const custom = (row.who && row.who !== 'admin' ? users[row.who]?.kc : admin)?.makeApiClient(k8s.CustomObjectsApi) as k8s.CustomObjectsApi;
      const api = API[row.kind];
      const body = { apiVersion: `${api.group}/${api.version}`, kind: row.kind, metadata: { name: row.name ?? `b${i}-${run}` }, spec: row.spec };
      const common = { group: api.group, version: api.version, plural: api.plural, body, dryRun: 'All' };
      const made = api.namespaced ? custom.createNamespacedCustomObject({ ...common, namespace: ns }) : custom.createClusterCustomObject(common);
      const got = await made.then((obj: { spec: Record<string, unknown> }) => ({ obj }), (err: unknown) => ({ err: failure(err) }));
      if (row.refused) {
        if (!('err' in got)) wrong.push(`${row.kind} ${row.what}: accepted, should be refused ${row.refused[0]}`);
        else if (got.err.code !== row.refused[0] || !row.refused[1].test(got.err.message)) wrong.push(`${row.kind} ${row.what}: ${got.err.code} ${got.err.message}`);
      } else if ('err' in got) {
        wrong.push(`${row.kind} ${row.what}: refused ${got.err.code} ${got.err.message}`);
      } else {
        try {
          row.check?.(got.obj, users);
        } catch (err) {
          wrong.push(`${row.kind} ${row.what}: ${String(err)}`);
        }
      }
    }
    assert.deepEqual(wrong, []);
    const custom = admin.makeApiClient(k8s.CustomObjectsApi);
    for (const kind of ['ContainerRestart', 'InPlaceRollout'] as const) {
      const list = (await custom.listNamespacedCustomObject({ group: API[kind].group, version: API[kind].version, plural: API[kind].plural, namespace: ns })) as { items: unknown[] };
      assert.deepEqual(list.items, [], `no ${kind} stored`);
    }
  });

  it('a rollout with every field at its edge makes a ContainerRestart the API server takes, and writes a valid status', async () => {
    const core = admin.makeApiClient(k8s.CoreV1Api);
    const apps = admin.makeApiClient(k8s.AppsV1Api);
    const custom = admin.makeApiClient(k8s.CustomObjectsApi);
    // The pod is bound to a node no kubelet runs: the rollout plans and creates its request, no agent takes it.
    await ensureNode(admin, farNode, {});
    const template = (image: string) => ({ metadata: { labels: { app: 'web' } }, spec: { nodeName: farNode, terminationGracePeriodSeconds: 5, containers: [{ name: 'app', image }] } });
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: { metadata: { name: 'web' }, spec: { replicas: 1, serviceName: 'web', updateStrategy: { type: 'OnDelete' }, selector: { matchLabels: { app: 'web' } }, template: template(env.sandbox.images.appV1) } },
    });
    await until('pod web-0 created', 60_000, async () => ((await core.readNamespacedPod({ namespace: ns, name: 'web-0' }).catch(() => undefined)) ? true : undefined));
    const name = longName(253);
    const edge = { maxUnavailable: '100%', partition: 0, progressDeadlineSeconds: 82_800, fallback: 'Pause', strategy: { gracePeriodSeconds: 3600, drainSeconds: 600, minReadySeconds: 3600, failurePolicy: 'Pause' } };
    const r = (await custom.createNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name }, spec: ipr(edge) } })) as InPlaceRollout;
    await apps.patchNamespacedStatefulSet({ namespace: ns, name: 'web', body: { spec: { template: template(env.sandbox.images.appV2) } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch));
    let last = '';
    const made = await until(
      "the rollout's ContainerRestart",
      90_000,
      async () => {
        const status = ((await custom.getNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, name })) as InPlaceRollout).status;
        last = JSON.stringify(status);
        const list = (await custom.listNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns })) as { items: ContainerRestart[] };
        return list.items.find((c) => ownedBy(r.metadata.uid ?? '', c));
      },
      () => last,
    );
    const sts = await apps.readNamespacedStatefulSet({ namespace: ns, name: 'web' });
    const revision = Number((await apps.readNamespacedControllerRevision({ namespace: ns, name: sts.status?.updateRevision ?? '' })).revision);
    assert.equal(made.metadata.name, restartName(name, 'web-0', revision));
    assert.ok((made.metadata.name ?? '').length <= 253);
    assert.equal(made.spec.podName, 'web-0');
    assert.deepEqual(made.spec.containers, [{ name: 'app', image: env.sandbox.images.appV2 }]);
    assert.equal(made.spec.activeDeadlineSeconds, 86_400, 'minReadySeconds + progressDeadlineSeconds, the most a ContainerRestart takes');
    assert.deepEqual(
      { grace: made.spec.strategy?.gracePeriodSeconds, drain: made.spec.strategy?.drainSeconds, minReady: made.spec.strategy?.minReadySeconds },
      { grace: 3600, drain: 600, minReady: 3600 },
    );
    // The status the coordinator wrote for this round: through the status subresource, so within the CRD's bounds.
    const settled = await until(
      'the rollout status of the round that made it',
      60_000,
      async () => {
        const cur = (await custom.getNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, name })) as InPlaceRollout;
        last = JSON.stringify(cur.status);
        return cur.status?.observedGeneration === cur.metadata.generation && cur.status?.podsInFlight?.includes('web-0') ? cur : undefined;
      },
      () => last,
    );
    assert.equal(settled.status?.phase, 'Progressing', last);
    assert.equal(made.status, undefined, 'no agent took it: its pod is on a node without one');
  });
});
