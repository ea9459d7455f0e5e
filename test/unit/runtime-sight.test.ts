// The first sight of the kubelet's new instance in the runtime: which listed containers count, called once, and
// the wait ends quietly when stopped or when the runtime fails (the API server's view then opens the gate).
import assert from 'node:assert/strict';
import { once, sightNewInstance } from '../../src/kube/kubelet/runtime-sight.js';
import type { Container, ContainerState } from '../../src/runtime/types.js';
import { systemClock } from '../../src/clock.js';

const c = (id: string, name: string, state: ContainerState): Container =>
  ({ id, name, podId: 'pod', attempt: 0, image: 'i', imageId: 'i', state, createdAt: new Date(0), labels: {}, annotations: {}, mounts: [] }) as Container;

/** A runtime whose list answers the given lists in turn (the last one again once they run out). */
function listing(...lists: Container[][]) {
  let i = 0;
  const asked: unknown[] = [];
  return {
    asked,
    listContainers: async (f?: unknown) => {
      asked.push(f);
      return lists[Math.min(i++, lists.length - 1)];
    },
  };
}

describe('kubelet strategy: the new instance sighted in the runtime', () => {
  it('waits past the old instance, a dead earlier one and a sibling, and calls seen once for a created instance', async () => {
    const rt = listing(
      [c('old', 'app', 'running'), c('dead', 'app', 'exited'), c('s', 'sidecar', 'running')],
      [c('old', 'app', 'exited'), c('dead', 'app', 'exited'), c('s', 'sidecar', 'running')],
      [c('old', 'app', 'exited'), c('new', 'app', 'created')],
    );
    let seen = 0;
    const s = sightNewInstance(rt, systemClock, 'pod', 'app', ['old'], () => seen++);
    assert.equal(await s.done, true);
    assert.equal(seen, 1);
    assert.equal(rt.asked.length, 3);
    assert.deepEqual(rt.asked[0], { podId: 'pod', brief: true });
  });

  it('ends false without calling seen when stopped, or when the runtime fails', async () => {
    let seen = 0;
    const waiting = sightNewInstance(listing([c('old', 'app', 'running')]), systemClock, 'pod', 'app', ['old'], () => seen++);
    waiting.stop();
    assert.equal(await waiting.done, false);
    const failing = sightNewInstance({ listContainers: async () => Promise.reject(new Error('down')) }, systemClock, 'pod', 'app', ['old'], () => seen++);
    assert.equal(await failing.done, false);
    assert.equal(seen, 0);
  });

  it('once: the gate is written at the first sight, whichever view sees it first', () => {
    let n = 0;
    const f = once(() => n++);
    f();
    f();
    assert.equal(n, 1);
  });
});
