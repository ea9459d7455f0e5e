import assert from 'node:assert/strict';
import type { KubernetesListObject, KubernetesObject } from '../../src/k8s/client.js';
import { Follower, type FollowFailure } from '../../src/k8s/list-follower.js';
import { watchWithDeadline } from '../../src/k8s/watch-deadline.js';
import { AgentError } from '../../src/errors.js';
import { FakeWatch } from '../support/fake-watch.js';
import { ManualClock, flush } from '../support/manual-timers.js';

const DEADLINE = { timeoutSeconds: 60, graceMs: 5000 };
const SILENCE_MS = 65_000;

describe('a watch request with a deadline (watch-deadline.ts)', () => {
  it('asks the API server to end it after timeoutSeconds, and ends one silent for that plus the grace with DeadlineExceeded naming the path', async () => {
    const clock = new ManualClock();
    const fake = new FakeWatch();
    const ended: unknown[] = [];
    await watchWithDeadline(fake, clock, DEADLINE).watch('/api/v1/pods', { resourceVersion: '7' }, () => undefined, (err) => ended.push(err));
    assert.deepEqual(fake.calls[0].params, { resourceVersion: '7', timeoutSeconds: 60 });
    await clock.advance(SILENCE_MS - 1);
    assert.deepEqual(ended, []);
    await clock.advance(1);
    assert.equal(ended.length, 1);
    assert.ok(AgentError.is(ended[0], 'DeadlineExceeded'), String(ended[0]));
    assert.match(String((ended[0] as Error).message), /watch of \/api\/v1\/pods: nothing from the API server for 65s/);
    assert.equal(fake.calls[0].aborted(), true, 'the request is aborted');
  });

  it('counts the silence from the last event; an end from the server or an abort stops the count', async () => {
    const clock = new ManualClock();
    const fake = new FakeWatch();
    const ended: unknown[] = [];
    const events: string[] = [];
    const w = watchWithDeadline(fake, clock, DEADLINE);
    await w.watch('/p', {}, (type) => events.push(type), (err) => ended.push(err));
    await clock.advance(SILENCE_MS - 1000);
    fake.calls[0].send('ADDED', { metadata: { name: 'a' } });
    await clock.advance(SILENCE_MS - 1000);
    assert.deepEqual([events, ended], [['ADDED'], []]);
    fake.calls[0].end(null);
    await clock.advance(SILENCE_MS);
    assert.deepEqual(ended, [null], 'the server ended it: done once, no deadline after');

    const ctrl = await w.watch('/p', {}, () => undefined, (err) => ended.push(err));
    ctrl.abort();
    await flush();
    assert.equal(fake.calls[1].aborted(), true, 'aborting the returned controller aborts the request');
    fake.calls[1].end(null);
    await clock.advance(SILENCE_MS);
    assert.deepEqual(ended, [null, null]);
  });

  it('a follower whose watch goes silent reports DeadlineExceeded and watches again from the last resourceVersion', async () => {
    type Obj = KubernetesObject & { metadata: { name: string; resourceVersion: string } };
    const clock = new ManualClock();
    const watch = new FakeWatch();
    const failures: FollowFailure[] = [];
    const list = (): Promise<KubernetesListObject<Obj>> => Promise.resolve({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '10' }, items: [] });
    const f = new Follower<Obj>({ watch, clock, random: () => 0.5 }, { path: '/api/v1/things', list, initialBackoffMs: 1000, watchDeadline: DEADLINE }, { failed: (x) => failures.push(x) });
    f.start();
    await f.whenSynced();
    await flush();
    assert.equal(watch.calls.length, 1);
    watch.calls[0].send('MODIFIED', { metadata: { name: 'a', namespace: 'ns', resourceVersion: '11' } } as Obj);
    await clock.advance(SILENCE_MS);
    await flush();
    assert.equal(failures.length, 1);
    assert.ok(AgentError.is(failures[0].error, 'DeadlineExceeded'), String(failures[0].error));
    await clock.advance(failures[0].retryInMs);
    await flush();
    assert.equal(watch.calls.length, 2, 'watched again after the back-off');
    assert.equal(watch.calls[1].resourceVersion, '11');
    await f.stop();
  });
});
