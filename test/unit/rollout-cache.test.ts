import assert from 'node:assert/strict';
import type { KubernetesListObject } from '../../src/k8s/client.js';
import type { ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { RolloutCache, type Obj, type RolloutLists } from '../../src/controllers/rollout/rollout-cache.js';
import type { RolloutApi } from '../../src/controllers/rollout/rollout-api.js';
import { ROLLOUT_LABEL } from '../../src/controllers/rollout/types.js';
import { FakeWatch } from '../support/fake-watch.js';
import { ManualClock, flush } from '../support/manual-timers.js';
import { memoryLogger } from '../support/memory-logger.js';

const UID = 'r1';
const cr = (name: string, rv: string, phase?: string): Obj & ContainerRestart =>
  ({ metadata: { name, namespace: 'ns', resourceVersion: rv, uid: `u-${name}`, labels: { [ROLLOUT_LABEL]: UID } }, spec: { podName: name, containers: [] }, ...(phase ? { status: { phase } } : {}) }) as Obj & ContainerRestart;
const names = (xs: { metadata?: { name?: string } }[]) => xs.map((x) => x.metadata?.name ?? '').sort();

/** A cache over a scripted API server: lists answer `listed`, direct reads count themselves, writes answer with new versions. */
function setup() {
  const clock = new ManualClock();
  const watch = new FakeWatch();
  let listed: Obj[] = [cr('web-5', '10')];
  const lists = { restarts: async (): Promise<KubernetesListObject<Obj>> => ({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '10' }, items: listed }) } as unknown as RolloutLists;
  let direct = 0;
  let rv = 20;
  const api = {
    listRestarts: async () => {
      direct++;
      return listed as ContainerRestart[];
    },
    createRestart: async (c: ContainerRestart) => ({ ...c, metadata: { ...c.metadata, uid: `u-${c.metadata.name}`, resourceVersion: String(++rv) } }),
  } as unknown as RolloutApi;
  const cache = new RolloutCache({ watch, clock, random: () => 0.5 }, lists, api, clock, memoryLogger().logger);
  let changes = 0;
  cache.onChange(() => changes++);
  return { cache, watch, clock, direct: () => direct, changes: () => changes, setListed: (l: Obj[]) => (listed = l) };
}

describe('rollout cache (watches with the coordinator’s own writes laid over them; fake watch, scripted lists)', () => {
  it('reads from the API server until its watch has listed, then from the watch; every change heard wakes the coordinator', async () => {
    const t = setup();
    assert.deepEqual(names(await t.cache.listRestarts('ns', UID)), ['web-5']);
    assert.equal(t.direct(), 1, 'the first read, before the watch listed, went to the API server');
    await flush();
    assert.equal(t.changes(), 1, 'the first list is a change');
    t.watch.calls[0].send('ADDED', cr('web-4', '11'));
    await flush();
    assert.equal(t.changes(), 2);
    assert.deepEqual(names(await t.cache.listRestarts('ns', UID)), ['web-4', 'web-5']);
    assert.equal(t.direct(), 1, 'read from the watch');
    // The resync: straight to the API server, whatever the watch holds.
    t.cache.fresh(true);
    assert.deepEqual(names(await t.cache.listRestarts('ns', UID)), ['web-5']);
    assert.equal(t.direct(), 2);
    t.cache.fresh(false);
    await t.cache.stop();
  });

  it('a ContainerRestart it created counts at once, before its watch event; the watch wins once it has caught up', async () => {
    const t = setup();
    await t.cache.listRestarts('ns', UID);
    await flush();
    const made = await t.cache.createRestart(cr('web-4', ''));
    assert.equal(made.metadata.resourceVersion, '21');
    assert.deepEqual(names(await t.cache.listRestarts('ns', UID)), ['web-4', 'web-5'], 'created, not yet watched: laid over the watch');
    t.watch.calls[0].send('ADDED', cr('web-4', '21'));
    t.watch.calls[0].send('MODIFIED', cr('web-4', '25', 'Running'));
    await flush();
    const seen = (await t.cache.listRestarts('ns', UID)).find((c) => c.metadata.name === 'web-4');
    assert.equal(seen?.status?.phase, 'Running', 'the newer version from the watch, not the one written');
    // Deleted after the write: gone (the overlay went when the watch caught up).
    t.watch.calls[0].send('DELETED', cr('web-4', '30', 'Running'));
    await flush();
    assert.deepEqual(names(await t.cache.listRestarts('ns', UID)), ['web-5']);
    await t.cache.stop();
  });

  it('a watch that fails sends the reads to the API server until it hears from it again', async () => {
    const t = setup();
    await t.cache.listRestarts('ns', UID);
    await flush();
    t.watch.calls[0].end(Object.assign(new Error('watch closed'), { statusCode: 500 }));
    await flush();
    const before = t.direct();
    await t.cache.listRestarts('ns', UID);
    assert.equal(t.direct(), before + 1, 'read from the API server while the watch is down');
    await t.clock.advance(1000);
    for (let i = 0; i < 5 && t.watch.calls.length < 2; i++) await flush();
    assert.equal(t.watch.calls.length, 2, 'the watch was started again (from the last version seen)');
    t.watch.calls[1].send('ADDED', cr('web-3', '40'));
    await flush();
    assert.deepEqual(names(await t.cache.listRestarts('ns', UID)), ['web-3', 'web-5']);
    assert.equal(t.direct(), before + 1, 'read from the watch again once it heard from the API server');
    await t.cache.stop();
  });
});
