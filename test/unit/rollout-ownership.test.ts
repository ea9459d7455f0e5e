// Ownership, not names or labels; revisions from the controller only (issue 28, findings 1, 2, 4 and 6): the
// planner's part, and one round of reconcile.ts on an in-memory RolloutApi (what it creates, what it deletes, the
// status it writes, how often it asks again after a refusal).
import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import type { ContainerRestart } from '../../src/controllers/container-restart/types.js';
import type { ImagePrewarm } from '../../src/controllers/image-prewarm/types.js';
import { CreateRefusals } from '../../src/controllers/kit/create-refusals.js';
import { deletablePrewarm, ownedBy, restartMismatch, rolloutOwnerRef } from '../../src/controllers/rollout/ownership.js';
import { IGNORED_REVISIONS, planRollout, prewarmName, REASON, restartName, type PodView, type RevisionView, type WorkloadView } from '../../src/controllers/rollout/plan.js';
import { reconcileRollout, restartObject } from '../../src/controllers/rollout/reconcile.js';
import type { RolloutApi } from '../../src/controllers/rollout/rollout-api.js';
import type { PodTemplate } from '../../src/controllers/rollout/template-diff.js';
import { ROLLOUT_LABEL, type InPlaceRollout, type InPlaceRolloutStatus } from '../../src/controllers/rollout/types.js';
import { memoryLogger } from '../support/memory-logger.js';

const NOW = Date.parse('2026-12-01T12:00:00Z');
const UID = '0123abcd-1111-2222-3333-444455556666';
const tpl = (image: string): PodTemplate => ({ metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'app', image }] } });
const rollout = (over: Partial<InPlaceRollout['spec']> = {}): InPlaceRollout => ({
  metadata: { name: 'roll', namespace: 'ns', uid: UID, generation: 1, resourceVersion: '1' },
  spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' }, prewarm: false, requester: { username: 'admin' }, ...over },
});

/** A StatefulSet of one pod, web-0, behind by one image, in an in-memory API; creates answer as `onCreate` says. */
function world(onCreate: (name: string) => 'ok' | 409 | 422 = () => 'ok') {
  const owner = [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'sts', controller: true }];
  const revision = (name: string, n: number, image: string) => ({ metadata: { name, ownerReferences: owner, labels: { app: 'web' } }, revision: n, data: { spec: { template: tpl(image) } } });
  const pod = {
    metadata: { name: 'web-0', uid: 'p0', ownerReferences: owner, labels: { app: 'web', 'controller-revision-hash': 'web-a' } },
    spec: { nodeName: 'n1', containers: [{ name: 'app', image: 'app:v1' }] },
    status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(NOW - 60_000) }] },
  };
  const state = { creates: 0, statuses: [] as InPlaceRolloutStatus[], deleted: [] as string[], squatter: undefined as ContainerRestart | undefined, prewarms: [] as ImagePrewarm[] };
  const api = {
    review: async () => ({ allowed: true }),
    getWorkload: async () => ({
      kind: 'StatefulSet',
      obj: { metadata: { name: 'web', uid: 'sts', generation: 2 }, spec: { replicas: 1, updateStrategy: { type: 'OnDelete' }, selector: { matchLabels: { app: 'web' } } }, status: { observedGeneration: 2, updateRevision: 'web-b' } },
    }),
    listRevisions: async () => [revision('web-a', 1, 'app:v1'), revision('web-b', 2, 'app:v2')],
    listPods: async () => [pod],
    listRestarts: async () => (state.squatter ? [state.squatter] : []),
    createRestart: async (cr: ContainerRestart) => {
      state.creates++;
      const answer = onCreate(cr.metadata.name ?? '');
      if (answer === 409) throw Object.assign(new AgentError('Aborted', 'already exists'), { httpStatus: 409 }); // as kubeError makes it
      if (answer === 422) throw new AgentError('InvalidArgument', 'spec.containers: Too many: 33: must have at most 32 items');
      return cr;
    },
    getRestart: async () => state.squatter,
    listPrewarms: async () => state.prewarms,
    deletePrewarm: async (name: string) => void state.deleted.push(name),
    listNodePrewarms: async () => [],
    writeRolloutStatus: async (r: InPlaceRollout, s: InPlaceRolloutStatus) => {
      state.statuses.push(s);
      return { ...r, status: s };
    },
  } as unknown as RolloutApi;
  return { api, state };
}

const deps = (api: RolloutApi, nowMs: () => number = () => NOW, refusals = new CreateRefusals()) => ({ api, node: 'n1', nowMs, leading: () => true, log: memoryLogger().logger, refusals });

describe('a rollout owns what it creates (ownership.ts, reconcile.ts)', () => {
  it('a ContainerRestart counts as the rollout\'s only with a controller ownerReference to its uid, and asking what it would ask', () => {
    const r = rollout();
    const wanted = restartObject(r, { kind: 'restart', name: 'n', pod: 'web-0', podUid: 'p0', containers: [{ name: 'app', image: 'app:v2' }], revisionHash: 'web-b', revisionNumber: 2 });
    assert.ok(ownedBy(UID, wanted));
    assert.equal(restartMismatch(r, wanted, wanted), undefined);
    const labelled = { ...wanted, metadata: { ...wanted.metadata, ownerReferences: [] } };
    assert.match(restartMismatch(r, labelled, wanted) ?? '', /no controller ownerReference to InPlaceRollout roll/);
    const forged = { ...wanted, spec: { ...wanted.spec, containers: [{ name: 'app' }] } };
    assert.match(restartMismatch(r, forged, wanted) ?? '', /another pod or other images/);
    assert.equal(ownedBy(UID, { metadata: { ownerReferences: [{ ...rolloutOwnerRef(r), controller: false }] } }), false, 'not as its controller');
  });

  it('an ImagePrewarm is deleted only when owned and named with the rollout\'s prefix, never for its label alone', () => {
    const r = rollout();
    const pw = (name: string, owned: boolean): ImagePrewarm => ({ metadata: { name, uid: name, labels: { [ROLLOUT_LABEL]: UID }, ...(owned ? { ownerReferences: [rolloutOwnerRef(r)] } : {}) } as ImagePrewarm['metadata'], spec: { images: ['x:1'] } as ImagePrewarm['spec'] });
    assert.ok(deletablePrewarm(r, pw(prewarmName(UID, 'web-a'), true)));
    assert.equal(deletablePrewarm(r, pw('someone-elses', false)), false, 'a label alone');
    assert.equal(deletablePrewarm(r, pw('someone-elses', true)), false, 'a forged ownerReference on another name');
  });

  it('a squatted ContainerRestart name: Failed with NameTaken naming it, the pod not counted as started; a squatter labelled as the rollout\'s is not its own', async () => {
    const { api, state } = world(() => 409);
    const name = restartName('roll', 'web-0', 2);
    state.squatter = { metadata: { name, namespace: 'ns', labels: { [ROLLOUT_LABEL]: UID }, annotations: { 'inplace-agent.io/rollout-revision': 'web-b', 'inplace-agent.io/rollout-revision-number': '2' } }, spec: { podName: 'web-0', containers: [{ name: 'app' }] }, status: { phase: 'Running' } } as ContainerRestart;
    await reconcileRollout(deps(api), rollout());
    const s = state.statuses.at(-1);
    assert.equal(s?.phase, 'Failed');
    assert.equal(s?.conditions?.find((c) => c.type === 'Progressing')?.reason, REASON.nameTaken);
    assert.deepEqual(s?.podsInFlight, []);
    assert.equal(s?.failures?.[0].pod, 'web-0');
    assert.match(s?.failures?.[0].reason ?? '', new RegExp(`^NameTaken: ContainerRestart ${name} exists and is not this rollout's: it has no controller ownerReference`));
  });

  it('a create refused with 422: Failed with CreateRefused in the status (not the last one), tried again only after a growing back-off', async () => {
    const { api, state } = world(() => 422);
    let now = NOW;
    const d = deps(api, () => now);
    const r = { ...rollout(), status: { phase: 'Succeeded' as const, message: 'old revision done' } };
    await reconcileRollout(d, r);
    assert.equal(state.creates, 1);
    const s = state.statuses.at(-1);
    assert.equal(s?.phase, 'Failed');
    assert.equal(s?.conditions?.find((c) => c.type === 'Progressing')?.reason, REASON.createRefused);
    assert.match(s?.message ?? '', /pod web-0: CreateRefused: the API server refused ContainerRestart .*Too many: 33/);
    // Rounds within the back-off do not ask again, and keep saying why.
    for (const dt of [100, 500, 900]) {
      now = NOW + dt;
      await reconcileRollout(d, { ...r, status: s });
    }
    assert.equal(state.creates, 1, 'no create within the first second');
    now = NOW + 1000;
    await reconcileRollout(d, { ...r, status: s });
    assert.equal(state.creates, 2);
    now += 1500;
    await reconcileRollout(d, { ...r, status: s });
    assert.equal(state.creates, 2, 'the second wait is longer (2 s)');
    // A new generation (the spec changed) asks again at once.
    await reconcileRollout(d, { ...r, metadata: { ...r.metadata, generation: 2 }, status: s });
    assert.equal(state.creates, 3);
    // A rollout gone is forgotten.
    d.refusals.keepOnly(new Set(['another']));
    assert.equal(d.refusals.size, 0);
  });

  it('stale pre-warms: the owned one is deleted (by its uid), a foreign one with the rollout\'s label is not', async () => {
    const { api, state } = world();
    const r = rollout();
    state.prewarms = [
      { metadata: { name: prewarmName(UID, 'web-a'), uid: 'mine', labels: { [ROLLOUT_LABEL]: UID }, ownerReferences: [rolloutOwnerRef(r)] } as ImagePrewarm['metadata'], spec: { images: ['app:v1'] } as ImagePrewarm['spec'] },
      { metadata: { name: 'team-cache', uid: 'theirs', labels: { [ROLLOUT_LABEL]: UID } } as ImagePrewarm['metadata'], spec: { images: ['db:1'] } as ImagePrewarm['spec'] },
    ];
    await reconcileRollout(deps(api), r);
    assert.deepEqual(state.deleted, [prewarmName(UID, 'web-a')]);
  });
});

describe('a DaemonSet rollout follows the revision of its template (revisions.ts)', () => {
  const ds = (template: PodTemplate): WorkloadView => ({ kind: 'DaemonSet', name: 'agent', uid: 'd', generation: 2, observedGeneration: 2, updateStrategy: 'OnDelete', desired: 1, templateGeneration: 2, template });
  const rev = (name: string, hash: string, revision: number, image: string): RevisionView => ({ name, hash, revision, template: tpl(image) });
  const dpod: PodView = { name: 'agent-x', uid: 'x', nodeName: 'n1', revisionHash: 'aaa', templateGeneration: '1', deleting: false, ready: true, readySinceMs: NOW - 60_000, containers: [{ name: 'app', image: 'app:v1' }], labels: { 'controller-revision-hash': 'aaa' }, annotations: {} };
  const r = rollout({ targetRef: { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent' } });

  it('a forged revision numbered above the template\'s is not adopted, and the status says so with its reason', () => {
    const revisions = [rev('agent-aaa', 'aaa', 1, 'app:v1'), rev('agent-bbb', 'bbb', 2, 'app:v2'), rev('agent-evil', 'evil', 9, 'evil:1')];
    const p = planRollout({ rollout: r, workload: ds(tpl('app:v2')), revisions, pods: [dpod], restarts: [], nowMs: NOW });
    assert.equal(p.status.updateRevision, 'bbb');
    const a = p.actions[0];
    assert.ok(a?.kind === 'restart');
    assert.deepEqual(a.containers, [{ name: 'app', image: 'app:v2' }]);
    const c = p.status.conditions?.find((x) => x.type === IGNORED_REVISIONS);
    assert.equal(c?.reason, REASON.revisionNotFromTemplate);
    assert.match(c?.message ?? '', /agent-evil \(revision 9\).*not the DaemonSet's spec\.template/);
  });

  it('at its template already: nothing to do, Succeeded, the forged one still reported', () => {
    const revisions = [rev('agent-aaa', 'aaa', 1, 'app:v1'), rev('agent-evil', 'evil', 9, 'app:v2')];
    const p = planRollout({ rollout: r, workload: ds(tpl('app:v1')), revisions, pods: [{ ...dpod, templateGeneration: '2' }], restarts: [], nowMs: NOW });
    assert.deepEqual(p.actions, []);
    assert.equal(p.status.phase, 'Succeeded');
    assert.equal(p.status.conditions?.find((x) => x.type === IGNORED_REVISIONS)?.reason, REASON.revisionNotFromTemplate);
  });

  it('no revision of the template listed yet: waits, whatever the newest says', () => {
    const p = planRollout({ rollout: r, workload: ds(tpl('app:v3')), revisions: [rev('agent-aaa', 'aaa', 1, 'app:v1'), rev('agent-evil', 'evil', 9, 'app:v3x')], pods: [dpod], restarts: [], nowMs: NOW });
    assert.deepEqual(p.actions, []);
    assert.match(p.status.message ?? '', /waiting for the DaemonSet's revision of its spec\.template/);
  });
});
