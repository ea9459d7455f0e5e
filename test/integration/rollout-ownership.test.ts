// What an attacker got from a rollout (issue 28, findings 1, 2, 4 and 6), each run as the review ran it, on the
// project's real cluster with the agents as the DaemonSet of deploy/ (its ServiceAccount and roles,
// scripts/kube-deploy-agent). Each attacker is a ServiceAccount with only the rights its finding assumes. The
// test waits for the coordinator's own sign (its status at the rollout's generation, or the condition it writes)
// before it looks at what was, or was not, done:
//   - a user who may patch someone else's ImagePrewarm, but not delete it, labels it as the rollout's: kept;
//   - a user with create containerrestarts and delete on one pod takes the name of that pod's ContainerRestart
//     first: the rollout fails naming it (NameTaken), the pod not counted as started nor updated;
//   - a template the ContainerRestart CRD refuses (422): the rollout fails naming it (CreateRefused), not the
//     Succeeded of the revision before;
//   - a user with only create controllerrevisions adds a "newer" revision to a DaemonSet: not adopted, reported.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL } from '../../src/controllers/image-prewarm/types.js';
import { ownedBy } from '../../src/controllers/rollout/ownership.js';
import { IGNORED_REVISIONS, REASON, restartName } from '../../src/controllers/rollout/plan.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, ROLLOUT_LABEL, type InPlaceRollout, type InPlaceRolloutSpec } from '../../src/controllers/rollout/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { deleteClusterRules, until, userWithRules } from '../support/kube-users.js';
import { TRAP_TERM_APP } from '../support/kube-web-pod.js';
import { requireRuntime } from '../support/require-runtime.js';
import { AGENT_NS, agentOnEveryNode, rolloutSettled } from '../support/rollout-wait.js';

const run = promisify(execFile);
const env = kubeEnv();
const V1 = env.sandbox.images.appV1;
const V2 = env.sandbox.images.appV2;
const IPR = { group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL };
const PW = { group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL };
const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const isReady = (p: k8s.V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

describe('InPlaceRollout: ownership, bounds and revisions against an attacker (the DaemonSet\'s agents, real cluster)', function () {
  this.timeout(300_000);
  const admin = new k8s.KubeConfig();
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  let custom: k8s.CustomObjectsApi;
  let ns = '';
  const victim = `victim-${Date.now().toString(36)}`;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'ipr-own-'));

  const kubectl = async (kubeconfig: string, ...args: string[]) => (await run(path.join(env.binDir, 'kubectl'), ['--kubeconfig', kubeconfig, '-n', ns, ...args])).stdout;
  const readPod = (name: string) => core.readNamespacedPod({ name, namespace: ns });
  const rollout = async (name: string) => (await custom.getNamespacedCustomObject({ ...IPR, namespace: ns, name })) as InPlaceRollout;
  const createRollout = (name: string, spec: InPlaceRolloutSpec) => custom.createNamespacedCustomObject({ ...IPR, namespace: ns, body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name }, spec } }) as Promise<InPlaceRollout>;
  const patchRollout = (name: string, spec: Partial<InPlaceRolloutSpec>) => custom.patchNamespacedCustomObject({ ...IPR, namespace: ns, name, body: { spec } }, merge) as Promise<InPlaceRollout>;
  const stsRevision = async () => (await apps.readNamespacedStatefulSet({ name: 'web', namespace: ns })).status?.updateRevision ?? '';
  /** The ContainerRestarts of the namespace the rollout owns. */
  const ownedRestarts = async (uid: string) => ((await custom.listNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns })) as { items: ContainerRestart[] }).items.filter((c) => ownedBy(uid, c));
  /** The rollout once the coordinator has written the status of its latest generation. */
  const atGeneration = (name: string) =>
    until(`the coordinator to write ${name}'s status at its generation`, 60_000, async () => {
      const r = await rollout(name);
      return r.status?.observedGeneration === r.metadata.generation ? r : undefined;
    });
  const spec = (kind: 'StatefulSet' | 'DaemonSet', name: string): InPlaceRolloutSpec => ({ targetRef: { apiVersion: 'apps/v1', kind, name }, prewarm: false, strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } });
  const podSpec = (image: string) => ({ nodeSelector: { 'kubernetes.io/hostname': env.nodeName }, terminationGracePeriodSeconds: 5, containers: [{ name: 'app', image, args: ['sh', '-c', TRAP_TERM_APP] }] });

  before(async function () {
    await requireRuntime(this, `the agent's DaemonSet ${AGENT_NS}/inplace-agent Ready on every node (scripts/kube-deploy-agent)`, async () => {
      admin.loadFromFile(env.kubeconfig);
      core = admin.makeApiClient(k8s.CoreV1Api);
      apps = admin.makeApiClient(k8s.AppsV1Api);
      custom = admin.makeApiClient(k8s.CustomObjectsApi);
      await agentOnEveryNode(admin);
    });
    ns = await createNamespace(admin, 'ipr-own');
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: { replicas: 1, serviceName: 'web', updateStrategy: { type: 'OnDelete' }, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: podSpec(V1) } },
      },
    });
    await until('pod web-0 Ready', 120_000, async () => {
      const p = await readPod('web-0').catch(() => undefined);
      return p && isReady(p) ? true : undefined;
    });
    await createRollout('web', spec('StatefulSet', 'web'));
    await rolloutSettled(admin, ns, 'web', ['Succeeded'], stsRevision, 120_000);
  });

  after(async () => {
    await custom.deleteClusterCustomObject({ ...PW, name: victim }).catch(() => undefined);
    if (ns) {
      await deleteClusterRules(admin, ns);
      await deleteNamespace(admin, ns);
    }
    rmSync(tmp, { recursive: true, force: true });
  });

  it("someone else's ImagePrewarm labelled with the rollout's label by a user who may patch but not delete it: not deleted", async () => {
    await custom.createClusterCustomObject({ ...PW, body: { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'ImagePrewarm', metadata: { name: victim }, spec: { images: [V1], nodeSelector: { 'inplace-test/none': 'true' } } } });
    const patcher = await userWithRules(admin, ns, 'patcher', [], [{ apiGroups: [FLEET_GROUP], resources: [IMAGE_PREWARM_PLURAL], resourceNames: [victim], verbs: ['get', 'patch'] }]);
    const uid = (await rollout('web')).metadata.uid ?? '';
    await patcher.kc.makeApiClient(k8s.CustomObjectsApi).patchClusterCustomObject({ ...PW, name: victim, body: { metadata: { labels: { [ROLLOUT_LABEL]: uid } } } }, merge);
    // A round of the rollout after the label (each round looks for stale pre-warms before it writes its status).
    const gen = (await patchRollout('web', { progressDeadlineSeconds: 601 })).metadata.generation;
    const seen = await atGeneration('web');
    assert.equal(seen.metadata.generation, gen);
    const still = (await custom.getClusterCustomObject({ ...PW, name: victim })) as { metadata: { labels?: Record<string, string> } };
    assert.equal(still.metadata.labels?.[ROLLOUT_LABEL], uid, 'still there, still labelled');
  });

  it('a squatted ContainerRestart name: the rollout fails naming it (NameTaken), the pod neither counted as started nor updated', async () => {
    await patchRollout('web', { paused: true });
    await kubectl(env.kubeconfig, 'set', 'image', 'statefulset/web', `app=${V2}`);
    const paused = await rolloutSettled(admin, ns, 'web', ['Paused'], stsRevision, 60_000);
    const rev = await apps.readNamespacedControllerRevision({ name: paused.status?.updateRevision ?? '', namespace: ns });
    const name = restartName('web', 'web-0', Number(rev.revision));
    // The attacker: create containerrestarts, and delete on that one pod. The name is predictable.
    const squatter = await userWithRules(admin, ns, 'squatter', [
      { apiGroups: [CR_GROUP], resources: [CR_PLURAL], verbs: ['create'] },
      { apiGroups: [''], resources: ['pods'], resourceNames: ['web-0'], verbs: ['delete'] },
    ]);
    const uid = paused.metadata.uid ?? '';
    await squatter.kc.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({
      group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns,
      body: { apiVersion: `${CR_GROUP}/${CR_VERSION}`, kind: 'ContainerRestart', metadata: { name, labels: { [ROLLOUT_LABEL]: uid } }, spec: { podName: 'web-0', containers: [{ name: 'app' }] } },
    });
    await patchRollout('web', { paused: false });
    const failed = await rolloutSettled(admin, ns, 'web', ['Failed'], stsRevision, 60_000);
    const c = failed.status?.conditions?.find((x) => x.type === 'Progressing');
    assert.equal(c?.reason, REASON.nameTaken, JSON.stringify(failed.status));
    assert.match(c?.message ?? '', new RegExp(`pod web-0: NameTaken: ContainerRestart ${name} exists and is not this rollout's`));
    assert.equal(failed.status?.failures?.[0]?.pod, 'web-0');
    assert.deepEqual(failed.status?.podsInFlight ?? [], [], 'web-0 not counted as started');
    assert.deepEqual(await ownedRestarts(uid), [], 'no ContainerRestart of the rollout');
    assert.equal((await readPod('web-0')).spec?.containers[0].image, V1, 'web-0 not updated');
  });

  it('a ContainerRestart the API server refuses (422): Failed naming it (CreateRefused), not the Succeeded of the revision before', async () => {
    // A fresh rollout of its own, Succeeded at the current template.
    await custom.deleteNamespacedCustomObject({ ...IPR, namespace: ns, name: 'web' });
    await kubectl(env.kubeconfig, 'set', 'image', 'statefulset/web', `app=${V1}`);
    await createRollout('web-2', spec('StatefulSet', 'web'));
    await rolloutSettled(admin, ns, 'web-2', ['Succeeded'], stsRevision, 60_000);
    // A pod image the StatefulSet takes but a ContainerRestart does not (its first character upper case).
    const refusedImage = `Upper.example/app:v2`;
    await kubectl(env.kubeconfig, 'set', 'image', 'statefulset/web', `app=${refusedImage}`);
    const failed = await rolloutSettled(admin, ns, 'web-2', ['Failed'], stsRevision, 60_000);
    const c = failed.status?.conditions?.find((x) => x.type === 'Progressing');
    assert.equal(c?.reason, REASON.createRefused, JSON.stringify(failed.status));
    assert.match(failed.status?.message ?? '', /pod web-0: CreateRefused: the API server refused ContainerRestart .*must be an image reference/);
    assert.deepEqual(failed.status?.podsInFlight ?? [], []);
    assert.equal((await readPod('web-0')).spec?.containers[0].image, V1, 'web-0 not touched');
    await kubectl(env.kubeconfig, 'set', 'image', 'statefulset/web', `app=${V1}`);
  });

  it('a forged ControllerRevision "newer" than a DaemonSet\'s own, by a user who may only create controllerrevisions: not adopted, reported', async () => {
    await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: { metadata: { name: 'ds' }, spec: { selector: { matchLabels: { app: 'ds' } }, updateStrategy: { type: 'OnDelete' }, template: { metadata: { labels: { app: 'ds' } }, spec: podSpec(V1) } } },
    });
    const pod = await until('the ds pod Ready', 120_000, async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=ds' })).items.find(isReady));
    await createRollout('ds', spec('DaemonSet', 'ds'));
    const before = await rolloutSettled(admin, ns, 'ds', ['Succeeded'], undefined, 60_000);
    const ds = await apps.readNamespacedDaemonSet({ name: 'ds', namespace: ns });
    const forger = await userWithRules(admin, ns, 'forger', [{ apiGroups: ['apps'], resources: ['controllerrevisions'], verbs: ['create'] }]);
    // The highest revision number there is: the DaemonSet controller cannot number its own above it.
    const forged = [
      'apiVersion: apps/v1',
      'kind: ControllerRevision',
      'metadata:',
      '  name: ds-forged',
      '  labels: { app: ds, controller-revision-hash: forged }',
      `  ownerReferences: [{ apiVersion: apps/v1, kind: DaemonSet, name: ds, uid: "${ds.metadata?.uid}", controller: true }]`,
      'revision: 9223372036854775807',
      `data: ${JSON.stringify({ spec: { template: { metadata: { labels: { app: 'ds' } }, spec: podSpec(V2), $patch: 'replace' } } })}`,
    ].join('\n');
    const file = path.join(tmp, 'forged.yaml');
    writeFileSync(file, forged);
    const kubeconfig = path.join(tmp, 'forger.kubeconfig');
    writeFileSync(kubeconfig, forger.kc.exportConfig());
    await kubectl(kubeconfig, 'create', '-f', file);
    // The coordinator's sign: the condition it writes for a revision it ignores.
    let last = '';
    const seen = await until(
      `the ${IGNORED_REVISIONS} condition on rollout ds`,
      60_000,
      async () => {
        const r = await rollout('ds');
        last = JSON.stringify(r.status);
        return r.status?.conditions?.find((c) => c.type === IGNORED_REVISIONS) ? r : undefined;
      },
      () => last,
    );
    const c = seen.status?.conditions?.find((x) => x.type === IGNORED_REVISIONS);
    assert.equal(c?.reason, REASON.revisionNotFromTemplate);
    assert.match(c?.message ?? '', /ControllerRevision ds-forged \(revision \d{19}\) of DaemonSet ds claims to be newer/);
    assert.equal(seen.status?.phase, 'Succeeded');
    assert.equal(seen.status?.updateRevision, before.status?.updateRevision, 'the target is still the revision of the template');
    assert.deepEqual(await ownedRestarts(seen.metadata.uid ?? ''), [], 'no ContainerRestart');
    const now = await readPod(pod.metadata?.name ?? '');
    assert.equal(now.spec?.containers[0].image, V1);
    assert.equal(now.metadata?.labels?.['controller-revision-hash'], pod.metadata?.labels?.['controller-revision-hash'], 'not relabelled');
  });
});
