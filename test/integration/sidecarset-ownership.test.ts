// What an attacker got from a SidecarSet (issue 39, the SidecarSet's finding), run as the review ran it, on the
// project's real cluster with the agents as the DaemonSet of deploy/: a SidecarSet of one sidecar `proxy` over a
// Deployment of 3 pods, then, before its image bump,
//   - a ContainerRestart created under the name the SidecarSet would use for one pod's upgrade (the name is
//     predictable), asking something else: before, the coordinator took its 409 as "started" and the pod stayed on
//     the old sidecar with the status Updating for ever;
//   - a ContainerRestart labelled as the SidecarSet's for the new images, for another pod, that the agent fails:
//     before, it was counted as the SidecarSet's failure and halted the upgrade everywhere.
// Checked once the coordinator says NameTaken (its own sign): the two other pods run the new sidecar, the taken
// pod's is named in the status with the object holding its name, only the SidecarSet's own ContainerRestarts
// (controller ownerReference with its uid) count, and neither foreign object was touched; once the squatter is
// gone the last pod is upgraded. Deleting the SidecarSet, the garbage collector deletes what it owns, and only that.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { CR_GROUP, CR_KIND, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { IMAGES_LABEL, ownedBySet, SIDECARSET_LABEL } from '../../src/controllers/sidecarset/ownership.js';
import { imagesKey, restartName, SidecarReasons } from '../../src/controllers/sidecarset/plan.js';
import type { SidecarSet, SidecarSetSpec } from '../../src/controllers/sidecarset/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { applyCrds } from '../support/kube-apply.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { kubeTest, until } from '../support/kube-test.js';
import { applyDeployFiles } from '../support/kube-users.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';
import { agentOnEveryNode } from '../support/rollout-wait.js';
import { containerOf, podReady, SidecarSetFixture, specImage } from '../support/sidecarset.js';

const env = kubeEnv();
const V1 = env.sandbox.images.appV1;
const V2 = env.sandbox.images.appV2;
const MESH = { mesh: 'on' };
const CRS = { group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL };
const trapping = (name: string, image: string): k8s.V1Container => ({ name, image, args: ['sh', '-c', TRAP_TERM_APP] });

describe('SidecarSet: only what it owns counts, against a squatter and a forged failure (the DaemonSet agents, real cluster)', function () {
  this.timeout(420_000);
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let custom: k8s.CustomObjectsApi;
  let ns = '';
  let scs: SidecarSetFixture;
  let squat: ContainerRestart;
  let forged: ContainerRestart;
  const spec: SidecarSetSpec = { selector: { matchLabels: MESH }, containers: [trapping('proxy', V1)], updateStrategy: { maxUnavailable: 3 } };
  const pods = async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: 'mesh=on' })).items.filter((p) => !p.metadata?.deletionTimestamp).sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  const restarts = async () => ((await custom.listNamespacedCustomObject({ ...CRS, namespace: ns })) as { items: ContainerRestart[] }).items;
  const readCr = (name: string) => custom.getNamespacedCustomObject({ ...CRS, namespace: ns, name }) as Promise<ContainerRestart>;
  const onProxy = (p: k8s.V1Pod, image: string) => podReady(p) && specImage(p, 'proxy') === image && !!containerOf(p, 'proxy')?.state?.running;

  before(async function () {
    ({ kc, core } = await kubeTest(this));
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await agentOnEveryNode(kc);
    await applyCrds(kc, ['sidecarset.yaml']);
    await applyDeployFiles(kc, ['sidecarset-injection.yaml']);
    ns = await createNamespace(kc, 'scsown');
    scs = new SidecarSetFixture(kc, `own-${randomBytes(3).toString('hex')}`);
    await scs.create({ ...spec, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } }, ns, MESH);
    const template: k8s.V1PodTemplateSpec = { metadata: { labels: { app: 'web', ...MESH } }, spec: { terminationGracePeriodSeconds: 5, containers: [trapping('app', V1)] } };
    await kc.makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({ namespace: ns, body: { metadata: { name: 'web' }, spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template } } });
    await until('3 injected pods Ready on the first sidecar', 180_000, async () => {
      const ps = await pods();
      return ps.length === 3 && ps.every((p) => onProxy(p, V1)) ? true : undefined;
    });
    await scs.settled(SidecarReasons.complete, 60_000, (s) => s.status?.readyPods === 3);
  });

  after(async () => {
    await scs?.delete();
    if (ns) await deleteNamespace(kc, ns);
  });

  it("a squatter on a pod's ContainerRestart name is NameTaken, named in the status; a labelled failure halts nothing; neither is counted nor touched", async () => {
    const set = await scs.read();
    const uid = set.metadata.uid ?? '';
    const next: SidecarSet = { ...set, spec: { ...set.spec, containers: [trapping('proxy', V2)] } };
    const key = imagesKey(next);
    const [p0, p1, p2] = await pods();
    const name = (p: k8s.V1Pod) => restartName(set, { name: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '' }, key);
    // The squatter takes the name of p1's upgrade, for a pod that is not there.
    squat = (await custom.createNamespacedCustomObject({
      ...CRS,
      namespace: ns,
      body: { apiVersion: `${CR_GROUP}/${CR_VERSION}`, kind: CR_KIND, metadata: { name: name(p1!) }, spec: { podName: 'nobody-here', containers: [{ name: 'proxy', image: V2 }] } },
    })) as ContainerRestart;
    // The forgery is labelled as the SidecarSet's for the new images, on p2, and fails (no such container).
    await custom.createNamespacedCustomObject({
      ...CRS,
      namespace: ns,
      body: { apiVersion: `${CR_GROUP}/${CR_VERSION}`, kind: CR_KIND, metadata: { name: 'forged-failure', labels: { [SIDECARSET_LABEL]: uid, [IMAGES_LABEL]: key } }, spec: { podName: p2!.metadata?.name, containers: [{ name: 'nope', image: V2 }] } },
    });
    forged = await until('the agent to fail the forged ContainerRestart', 60_000, async () => {
      const cr = await readCr('forged-failure');
      return cr.status?.phase === 'Failed' ? cr : undefined;
    });

    await scs.patchSpec({ containers: [trapping('proxy', V2)] });
    const taken = await scs.settled(SidecarReasons.nameTaken, 180_000, (s) => s.status?.updatedPods === 2 && (s.status?.podsInFlight ?? []).length === 0);
    const st = taken.status!;
    assert.match(st.message ?? '', new RegExp(`ContainerRestart ${ns}/${squat.metadata.name} exists and is not SidecarSet ${scs.name}'s: it has no controller ownerReference`));
    assert.deepEqual(st.failures?.map((f) => f.pod), [`${ns}/${p1!.metadata?.name}`], 'the taken pod alone; the forged failure is not the SidecarSet’s');
    assert.match(st.failures?.[0]?.reason ?? '', /^NameTaken: /);

    const now = await pods();
    assert.deepEqual(now.map((p) => p.metadata?.uid), [p0, p1, p2].map((p) => p?.metadata?.uid), 'the same pods, upgraded in place');
    assert.deepEqual(now.map((p) => specImage(p, 'proxy')), [V2, V1, V2]);
    assert.ok(onProxy(now[0]!, V2) && onProxy(now[2]!, V2));
    const own = (await restarts()).filter((cr) => ownedBySet(uid, cr));
    assert.deepEqual(own.map((cr) => cr.metadata.name).sort(), [name(p0!), name(p2!)].sort(), 'its own: one per upgraded pod, named with a digest');
    for (const cr of own) assert.equal(cr.status?.phase, 'Succeeded');
    const [s2, f2] = await Promise.all([readCr(squat.metadata.name ?? ''), readCr('forged-failure')]);
    assert.equal(s2.metadata.resourceVersion, squat.metadata.resourceVersion, 'the squatter untouched');
    assert.equal(f2.metadata.resourceVersion, forged.metadata.resourceVersion, 'the forgery untouched');
  });

  it('once the squatter is gone, the last pod gets the new sidecar', async () => {
    await custom.deleteNamespacedCustomObject({ ...CRS, namespace: ns, name: squat.metadata.name ?? '' });
    await scs.settled(SidecarReasons.complete, 180_000, (s) => s.status?.updatedPods === 3 && !s.status?.failures);
    const now = await pods();
    assert.ok(now.length === 3 && now.every((p) => onProxy(p, V2)), now.map((p) => `${p.metadata?.name}:${specImage(p, 'proxy')}`).join(' '));
  });

  it('deleted by owner only: with the SidecarSet, the garbage collector deletes its ContainerRestarts, not the forgery', async () => {
    const uid = (await scs.read()).metadata.uid ?? '';
    assert.equal((await restarts()).filter((cr) => ownedBySet(uid, cr)).length, 3);
    await scs.delete();
    await until('the garbage collector to delete the SidecarSet’s ContainerRestarts', 90_000, async () => ((await restarts()).some((cr) => ownedBySet(uid, cr)) ? undefined : true));
    assert.deepEqual((await restarts()).map((cr) => cr.metadata.name), ['forged-failure']);
  });
});
