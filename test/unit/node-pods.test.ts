import assert from 'node:assert/strict';
import type { V1Pod, V1PodList } from '../../src/k8s/client.js';
import { NodePods } from '../../src/kube/node-pods.js';
import { FakeWatch } from '../support/fake-watch.js';
import { ManualClock, flush } from '../support/manual-timers.js';
import { memoryLogger } from '../support/memory-logger.js';

const pod = (name: string, uid: string, rv: string): V1Pod => ({ metadata: { name, namespace: 'shop', uid, resourceVersion: rv }, spec: { nodeName: 'node1', containers: [] } });

/** listPodForAllNamespaces answered from a script: an Error is thrown; the selectors asked for are kept. */
function scriptedCore(answers: (V1Pod[] | Error)[]) {
  const asked: string[] = [];
  const core = {
    listPodForAllNamespaces: (p: { fieldSelector?: string }): Promise<V1PodList> => {
      asked.push(p.fieldSelector ?? '');
      const a = answers[Math.min(asked.length - 1, answers.length - 1)];
      return a instanceof Error ? Promise.reject(a) : Promise.resolve({ metadata: { resourceVersion: '50' }, items: a });
    },
  };
  return { core: core as never, asked };
}

describe("kube: this node's pods (NodePods on the follower, the test clock and a scripted watch)", () => {
  it("lists this node's pods only, emits each, and finds them by uid and name; changes through the watch are emitted", async () => {
    const clock = new ManualClock();
    const watch = new FakeWatch();
    const { core, asked } = scriptedCore([[pod('web', 'u1', '10'), pod('db', 'u2', '11')]]);
    const pods = new NodePods(core, 'node1', clock, memoryLogger().logger, { watch, clock, random: () => 0.5 });
    const seen: string[] = [];
    pods.on('pod', (p: V1Pod) => seen.push(`${p.metadata?.name}@${p.metadata?.resourceVersion}`));
    await pods.start();
    assert.deepEqual(asked, ['spec.nodeName=node1']);
    assert.equal(watch.calls[0].params.fieldSelector, 'spec.nodeName=node1', 'the watch is of this node too');
    assert.deepEqual(seen, ['web@10', 'db@11']);
    assert.equal(pods.byUid('u2')?.metadata?.name, 'db');
    assert.equal(pods.get('shop', 'web')?.metadata?.uid, 'u1');
    watch.calls[0].send('MODIFIED', pod('web', 'u1', '12'));
    assert.deepEqual(seen.at(-1), 'web@12');
    assert.equal(pods.list().length, 2);
    await pods.stop();
  });

  it('with the API server not answering, start() returns after its timeout on the clock, and the list is retried after 0.5, 1, 2 s', async () => {
    const clock = new ManualClock();
    const watch = new FakeWatch();
    const down = new Error('connect ECONNREFUSED');
    const { core, asked } = scriptedCore([down, down, down, [pod('web', 'u1', '10')]]);
    const { logger, lines } = memoryLogger();
    const pods = new NodePods(core, 'node1', clock, logger, { watch, clock, random: () => 0.5 });
    let started = false;
    const start = pods.start(10_000).then(() => (started = true));
    await clock.sleeping((t) => t.ms === 500, 'the first retry');
    for (const ms of [500, 1000, 2000]) {
      await clock.sleeping((t) => t.ms === ms, `the retry after ${ms} ms`);
      await clock.advance(ms);
      await flush();
    }
    assert.equal(asked.length, 4);
    assert.equal(started, true, 'the first list came in before the timeout: start() returned');
    assert.equal(pods.list().length, 1);
    const retries = lines.filter((l) => l.includes("watch of this node's pods failed")).map((l) => (JSON.parse(l) as { retryInMs: number }).retryInMs);
    assert.deepEqual(retries, [500, 1000, 2000]);
    await start;
    await pods.stop();

    const clock2 = new ManualClock();
    const never = new NodePods(scriptedCore([down]).core, 'node1', clock2, memoryLogger().logger, { watch: new FakeWatch(), clock: clock2, random: () => 0.5 });
    let returned = false;
    const p = never.start(10_000).then(() => (returned = true));
    await clock2.sleeping((t) => t.ms === 10_000, 'the start timeout');
    await clock2.advance(9_999);
    assert.equal(returned, false, 'not before its timeout');
    await clock2.advance(1);
    await p;
    assert.equal(never.list().length, 0);
    await never.stop();
  });
});
