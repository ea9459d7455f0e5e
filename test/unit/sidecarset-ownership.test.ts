// A SidecarSet counts, and takes a 409 as "started" for, only what it owns (controllers/sidecarset/ownership.ts):
// its ContainerRestarts carry a controller ownerReference with its uid and a name with a digest; a pod whose
// ContainerRestart name is held by another's object is NameTaken in the status, naming it, and the others go on.
// The round runs against an in-memory API server answering as the real one does (409 on a taken name).
import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import type { ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { CreateRefusals } from '../../src/controllers/kit/create-refusals.js';
import { MAX_NAME } from '../../src/controllers/kit/names.js';
import { StatusWrites } from '../../src/controllers/kit/status-pace.js';
import { IMAGES_LABEL, ownedBySet, restartMismatch, SIDECARSET_LABEL, setOwnerRef } from '../../src/controllers/sidecarset/ownership.js';
import { imagesKey, planSidecarSet, restartName, SidecarReasons, type SidecarPodView } from '../../src/controllers/sidecarset/plan.js';
import { reconcileSidecarSet } from '../../src/controllers/sidecarset/round.js';
import type { SidecarSetApi } from '../../src/controllers/sidecarset/sidecarset-api.js';
import { injectedAnnotation, type SidecarSet, type SidecarSetStatus } from '../../src/controllers/sidecarset/types.js';
import { restartObject } from '../../src/controllers/sidecarset/views.js';
import { memoryLogger } from '../support/memory-logger.js';

const NOW = Date.parse('2026-12-05T08:00:00Z');
const set: SidecarSet = { metadata: { name: 'mesh', uid: 's1', generation: 2 }, spec: { selector: { matchLabels: { mesh: 'on' } }, containers: [{ name: 'proxy', image: 'proxy:2' }], updateStrategy: { maxUnavailable: 3 } } };
const KEY = imagesKey(set);
const view = (i: number): SidecarPodView => ({
  namespace: 'ns',
  name: `web-${i}`,
  uid: `u${i}`,
  labels: { mesh: 'on' },
  namespaceLabels: {},
  annotations: { [injectedAnnotation('mesh')]: '1' },
  containers: [{ name: 'proxy', image: 'proxy:1' }],
  initContainers: [],
  ready: true,
  deleting: false,
});
const podObj = (i: number) => ({
  metadata: { name: `web-${i}`, namespace: 'ns', uid: `u${i}`, labels: { mesh: 'on' }, annotations: { [injectedAnnotation('mesh')]: '1' } },
  spec: { containers: [{ name: 'proxy', image: 'proxy:1' }] },
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
});
const mine = (i: number): ContainerRestart => {
  const [a] = planSidecarSet({ set, pods: [view(i)], restarts: [], nowMs: NOW }).actions;
  return restartObject(set, a!, { username: 'agent' });
};

/** An in-memory API server holding `objects` ContainerRestarts; a create of a taken name is a 409. */
function world(objects: ContainerRestart[]) {
  const status: SidecarSetStatus[] = [];
  const created: string[] = [];
  const api = {
    listPods: async () => [0, 1, 2].map(podObj),
    namespaceLabels: async () => new Map(),
    listRestarts: async () => objects.filter((o) => o.metadata.labels?.[SIDECARSET_LABEL] === 's1'),
    getRestart: async (namespace: string, name: string) => objects.find((o) => o.metadata.namespace === namespace && o.metadata.name === name),
    requester: async () => ({ username: 'agent' }),
    createRestart: async (cr: ContainerRestart) => {
      if (objects.some((o) => o.metadata.name === cr.metadata.name)) throw Object.assign(new AgentError('Aborted', 'already exists'), { httpStatus: 409 }); // as kubeError makes it
      objects.push(cr);
      created.push(cr.spec.podName);
      return cr;
    },
    listPrewarms: async () => [],
    writeStatus: async (s: SidecarSet, st: SidecarSetStatus) => {
      status.push(st);
      return { ...s, status: st };
    },
  } as unknown as SidecarSetApi;
  const deps = { api, nowMs: () => NOW, leading: () => true, log: memoryLogger().logger, refusals: new CreateRefusals(), statusWrites: new StatusWrites() };
  return { deps, status, created, objects };
}

describe('SidecarSet ownership of its ContainerRestarts', () => {
  it('its ContainerRestart carries a controller ownerReference to the SidecarSet, and a name with a digest that fits', () => {
    const cr = mine(0);
    assert.deepEqual((cr.metadata as { ownerReferences?: unknown }).ownerReferences, [{ apiVersion: 'inplace-agent.io/v1alpha1', kind: 'SidecarSet', name: 'mesh', uid: 's1', controller: true }]);
    assert.ok(ownedBySet('s1', cr));
    assert.match(cr.metadata.name ?? '', /^mesh-web-0-[0-9a-f]{10}$/);
    // A SidecarSet made again under the same name (another uid) asks under another name.
    assert.notEqual(restartName({ ...set, metadata: { ...set.metadata, uid: 's2' } }, view(0), KEY), cr.metadata.name);
    assert.ok(restartName(set, { name: 'p'.repeat(300), uid: 'u' }, KEY).length <= MAX_NAME);
  });

  it('a label, a forged non-controller reference or another owner does not make it its own', () => {
    const cr = mine(0);
    assert.equal(ownedBySet('s1', { metadata: { ...cr.metadata, ownerReferences: [] } }), false);
    assert.equal(ownedBySet('s1', { metadata: { ownerReferences: [{ ...setOwnerRef(set), controller: false }] } }), false);
    assert.equal(ownedBySet('s1', { metadata: { ownerReferences: [{ ...setOwnerRef(set), kind: 'InPlaceRollout' }] } }), false);
    assert.equal(ownedBySet('', { metadata: { ownerReferences: [{ ...setOwnerRef(set), uid: '' }] } }), false);
  });

  it('a 409 is its own upgrade only when the object found is its own and asks the same', () => {
    const cr = mine(0);
    assert.equal(restartMismatch(set, cr, cr), undefined);
    assert.match(restartMismatch(set, { ...cr, metadata: { ...cr.metadata, ownerReferences: [] } as ContainerRestart['metadata'] }, cr) ?? '', /no controller ownerReference to SidecarSet mesh \(uid s1\)/);
    assert.match(restartMismatch(set, { ...cr, spec: { ...cr.spec, podName: 'web-9' } }, cr) ?? '', /another pod or other images/);
    assert.match(restartMismatch(set, { ...cr, metadata: { ...cr.metadata, labels: { ...cr.metadata.labels, [IMAGES_LABEL]: 'old' } } }, cr) ?? '', /another image set/);
  });

  it("a round: a squatter under a pod's name is NameTaken, named in the status; a labelled failed one is not counted; the other pods go on", async () => {
    const squat = { ...mine(1), metadata: { name: mine(1).metadata.name, namespace: 'ns' }, spec: { podName: 'elsewhere', containers: [{ name: 'x', image: 'y' }] } } as ContainerRestart;
    const labelled = { metadata: { name: 'fake', namespace: 'ns', labels: { [SIDECARSET_LABEL]: 's1', [IMAGES_LABEL]: KEY } }, spec: { podName: 'web-2', containers: [{ name: 'proxy', image: 'proxy:2' }] }, status: { phase: 'Failed', reason: 'Evil' } } as ContainerRestart;
    const w = world([squat, labelled]);
    await reconcileSidecarSet(w.deps, set);
    assert.deepEqual(w.created.sort(), ['web-0', 'web-2'], 'web-1 waits on its taken name; the labelled failure halts nothing');
    const st = w.status.at(-1)!;
    assert.equal(st.conditions?.[0]?.reason, SidecarReasons.nameTaken);
    assert.match(st.message ?? '', new RegExp(`ContainerRestart ns/${squat.metadata.name} exists and is not SidecarSet mesh's: it has no controller ownerReference`));
    assert.deepEqual(st.failures?.map((f) => f.pod), ['ns/web-1']);
    assert.deepEqual(st.podsInFlight?.sort(), ['ns/web-0', 'ns/web-2'], 'only its own count in flight');
    assert.ok(w.objects.includes(squat) && w.objects.includes(labelled), 'nothing of another is deleted');
    // The next round backs off the taken name: no second create, the status still names it.
    await reconcileSidecarSet(w.deps, { ...set, status: st });
    assert.deepEqual(w.created.sort(), ['web-0', 'web-2']);
  });

  it('a round: a 409 on its own object asking the same is its upgrade started, not a conflict', async () => {
    // Its own, not listed (no SIDECARSET_LABEL: a list that has not caught up), asking what it would ask.
    const w = world([{ ...mine(0), metadata: { ...mine(0).metadata, labels: { [IMAGES_LABEL]: KEY } } }]);
    await reconcileSidecarSet(w.deps, set);
    const st = w.status.at(-1)!;
    assert.equal(st.conditions?.[0]?.reason, SidecarReasons.updating);
    assert.equal(st.failures, undefined);
  });
});
