import assert from 'node:assert/strict';
import type { KubernetesListObject, KubernetesObject } from '../../src/k8s/client.js';
import { Follower, type FollowFailure } from '../../src/k8s/list-follower.js';
import { DEFAULT_WATCH_DEADLINE } from '../../src/k8s/watch-deadline.js';
import { FakeWatch } from '../support/fake-watch.js';
import { ManualClock, flush } from '../support/manual-timers.js';

type Obj = KubernetesObject & { metadata: { name: string; namespace: string; resourceVersion: string } };

/** The clock's sleeps but the watch requests' deadlines (watch-deadline.ts, armed at each request and event). */
const WATCH_SILENCE_MS = DEFAULT_WATCH_DEADLINE.timeoutSeconds * 1000 + DEFAULT_WATCH_DEADLINE.graceMs;
const backoffs = (clock: ManualClock) => clock.sleeps.filter((ms) => ms !== WATCH_SILENCE_MS);

const obj = (name: string, rv: string): Obj => ({ metadata: { name, namespace: 'ns', resourceVersion: rv } });
const httpError = (statusCode: number) => Object.assign(new Error(`HTTP ${statusCode}`), { statusCode });

/** A list request answered from a script: each call takes the next answer (an Error is thrown). */
function scriptedList(answers: (Obj[] | Error)[], rvs: string[]) {
  let n = 0;
  const list = (): Promise<KubernetesListObject<Obj>> => {
    const i = n++;
    const a = answers[Math.min(i, answers.length - 1)];
    if (a instanceof Error) return Promise.reject(a);
    return Promise.resolve({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: rvs[Math.min(i, rvs.length - 1)] }, items: a });
  };
  return { list, calls: () => n };
}

function follow(answers: (Obj[] | Error)[], rvs: string[], clock = new ManualClock()) {
  const watch = new FakeWatch();
  const l = scriptedList(answers, rvs);
  const seen = { changed: [] as string[][], added: [] as string[], deleted: [] as string[], failures: [] as FollowFailure[] };
  const follower = new Follower<Obj>(
    // random() = 0.5: the jitter spreads by nothing, so the delays are the back-off's own.
    { watch, clock, random: () => 0.5 },
    { path: '/api/v1/things', list: l.list, initialBackoffMs: 1000, maxBackoffMs: 8000, deniedRetryMs: 60_000 },
    {
      add: (o) => seen.added.push(o.metadata.name),
      delete: (o) => seen.deleted.push(o.metadata.name),
      changed: (items) => seen.changed.push(items.map((o) => o.metadata.name).sort()),
      failed: (f) => seen.failures.push(f),
    },
  );
  return { follower, watch, lists: l.calls, seen, clock };
}

describe('kube: the follower (list, watch, restart with back-off)', () => {
  it('lists, hands on the whole list once, then watches from its resourceVersion and hands on each change', async () => {
    const t = follow([[obj('a', '3'), obj('b', '4')]], ['10']);
    t.follower.start();
    await t.follower.whenSynced();
    await flush();
    assert.deepEqual(t.seen.changed, [['a', 'b']], 'one call with the whole list, not one per item');
    assert.deepEqual(t.seen.added, ['a', 'b']);
    assert.equal(t.watch.calls.length, 1);
    assert.equal(t.watch.calls[0].resourceVersion, '10');
    t.watch.calls[0].send('ADDED', obj('c', '11'));
    await flush();
    assert.deepEqual(t.seen.changed.at(-1), ['a', 'b', 'c']);
    assert.deepEqual(t.follower.get('c', 'ns')?.metadata.resourceVersion, '11');
    await t.follower.stop();
  });

  it('410 Gone: lists again at once (no back-off, no failure), drops what the new list lacks, watches from the new version', async () => {
    const t = follow([[obj('a', '3')], [obj('b', '20')]], ['10', '21']);
    t.follower.start();
    await t.follower.whenSynced();
    t.watch.calls[0].send('MODIFIED', obj('a', '12'));
    t.watch.calls[0].end(httpError(410));
    await flush();
    await flush();
    assert.equal(t.lists(), 2, 'listed again');
    assert.equal(t.watch.calls.length, 2);
    assert.equal(t.watch.calls[1].resourceVersion, '21', 'the new watch starts from the new list');
    assert.deepEqual(t.seen.deleted, ['a']);
    assert.deepEqual(t.seen.changed.at(-1), ['b']);
    assert.deepEqual(t.seen.failures, []);
    assert.deepEqual(backoffs(t.clock), [], 'no back-off');
    await t.follower.stop();
  });

  it('a failing list is retried after 1, 2, 4, 8, 8 s on the clock, and never handed on as an empty list', async () => {
    const down = new Error('connect ECONNREFUSED');
    const t = follow([down, down, down, down, down, [obj('a', '1')]], ['', '', '', '', '', '30']);
    t.follower.start();
    for (const [i, ms] of [1000, 2000, 4000, 8000, 8000].entries()) {
      await t.clock.sleeping((x) => x.ms === ms, `the back-off of failure ${i + 1}`);
      assert.equal(t.lists(), i + 1);
      await t.clock.advance(ms - 1);
      assert.equal(t.lists(), i + 1, 'not retried before its delay');
      await t.clock.advance(1);
      await flush();
    }
    await t.follower.whenSynced();
    assert.deepEqual(
      t.seen.failures.map((f) => [f.failures, f.retryInMs, f.status, f.denied]),
      [
        [1, 1000, 0, false],
        [2, 2000, 0, false],
        [3, 4000, 0, false],
        [4, 8000, 0, false],
        [5, 8000, 0, false],
      ],
    );
    assert.deepEqual(backoffs(t.clock), [1000, 2000, 4000, 8000, 8000]);
    await flush();
    assert.deepEqual(t.seen.changed, [['a']], 'nothing before the list that succeeded');
    await t.follower.stop();
  });

  it('a watch that fails is started again from the last version seen (no list), and success resets the back-off', async () => {
    const t = follow([[obj('a', '3')]], ['10']);
    t.follower.start();
    await t.follower.whenSynced();
    t.watch.calls[0].send('MODIFIED', obj('a', '14'));
    t.watch.calls[0].end(new Error('socket hang up'));
    await t.clock.sleeping((x) => x.ms === 1000, 'the first back-off');
    await t.clock.advance(1000);
    await flush();
    assert.equal(t.watch.calls.length, 2);
    assert.equal(t.watch.calls[1].resourceVersion, '14', 'from the last version seen');
    assert.equal(t.lists(), 1, 'no list: the cache is still the server\'s view');
    t.watch.calls[1].end(new Error('socket hang up'));
    await t.clock.sleeping((x) => x.ms === 2000, 'the second back-off');
    await t.clock.advance(2000);
    await flush();
    t.watch.calls[2].send('MODIFIED', obj('a', '15'));
    t.watch.calls[2].end(new Error('socket hang up'));
    await t.clock.sleeping((x) => x.ms === 1000 && x.at > t.clock.now(), 'the back-off started again');
    assert.deepEqual(t.seen.failures.map((f) => f.failures), [1, 2, 1]);
    await t.follower.stop();
  });

  it('one pending restart however many times the failure is reported', async () => {
    const t = follow([[obj('a', '3')]], ['10']);
    t.follower.start();
    await t.follower.whenSynced();
    t.watch.calls[0].end(new Error('reset'));
    await t.clock.sleeping((x) => x.ms === 1000, 'the back-off');
    // The same failure told again (another path of the client): no second restart.
    (t.follower as unknown as { restartLater(e: unknown): void }).restartLater(new Error('reset'));
    assert.equal(t.clock.pending().length, 1);
    assert.equal(t.seen.failures.length, 1);
    await t.follower.stop();
  });

  it('403 and 404 are retried after the long delay, not the back-off', async () => {
    for (const status of [403, 404]) {
      const t = follow([httpError(status), [obj('a', '1')]], ['', '5']);
      t.follower.start();
      await t.clock.sleeping((x) => x.ms === 60_000, `the retry after ${status}`);
      assert.deepEqual(
        t.seen.failures.map((f) => [f.status, f.denied, f.retryInMs]),
        [[status, true, 60_000]],
      );
      await t.clock.advance(60_000);
      await t.follower.whenSynced();
      assert.equal(t.lists(), 2);
      await t.follower.stop();
    }
  });

  it('stop() ends the watch and cancels a pending restart: nothing is listed or watched after it', async () => {
    const t = follow([[obj('a', '3')]], ['10']);
    t.follower.start();
    await t.follower.whenSynced();
    const first = t.watch.calls[0];
    first.end(new Error('reset'));
    await t.clock.sleeping((x) => x.ms === 1000, 'the back-off');
    await t.follower.stop();
    assert.deepEqual(t.clock.pending(), [], 'the restart timer is gone');
    await t.clock.advance(60_000);
    await flush();
    assert.equal(t.watch.calls.length, 1);
    assert.equal(t.lists(), 1);

    const u = follow([[obj('a', '3')]], ['10']);
    u.follower.start();
    await u.follower.whenSynced();
    await flush();
    const changes = u.seen.changed.length;
    await u.follower.stop();
    assert.ok(u.watch.calls[0].aborted(), 'the open watch request is aborted');
    u.watch.calls[0].send('ADDED', obj('late', '11'));
    await flush();
    assert.equal(u.seen.changed.length, changes, 'nothing is handed on after stop()');
    await u.follower.stop(); // idempotent
  });
});
