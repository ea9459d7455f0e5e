import assert from 'node:assert/strict';
import { Backoff } from '../../src/pull/backoff.js';
import { PullQueue } from '../../src/pull/pull-queue.js';
import { AgentError } from '../../src/errors.js';
import { ManualClock, flush } from '../support/pull-fakes.js';

describe('pull Backoff', () => {
  it('grows exponentially from the initial delay and stops at the cap', () => {
    const b = new Backoff(new ManualClock(), { initialMs: 100, factor: 2, maxMs: 1000, jitter: 0 });
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((r) => b.delay(r)), [100, 200, 400, 800, 1000, 1000]);
  });

  it('spreads each delay by at most ±jitter and never past the cap', () => {
    const low = new Backoff(new ManualClock(), { initialMs: 1000, maxMs: 5000, jitter: 0.5, random: () => 0 });
    const high = new Backoff(new ManualClock(), { initialMs: 1000, maxMs: 5000, jitter: 0.5, random: () => 0.999999 });
    assert.equal(low.delay(1), 500);
    assert.equal(high.delay(1), 1500);
    assert.equal(high.delay(10), 5000);
  });

  it('waits on the injected clock and stops when the signal aborts', async () => {
    const clock = new ManualClock();
    const b = new Backoff(clock, { initialMs: 1000, jitter: 0 });
    let waited = 0;
    const p = b.wait(2).then((ms) => (waited = ms));
    await clock.advance(1999);
    assert.equal(waited, 0);
    await clock.advance(1);
    assert.equal(waited, 2000);
    await p;
    const ctl = new AbortController();
    const q = b.wait(1, ctl.signal);
    ctl.abort(new AgentError('Cancelled', 'stop'));
    await assert.rejects(q, /stop/);
  });
});

describe('PullQueue', () => {
  it('lets maxParallel through and queues the rest in arrival order with their positions', async () => {
    const q = new PullQueue(2);
    const positions: Record<string, number[]> = { c: [], d: [], e: [] };
    const order: string[] = [];
    const a = await q.acquire();
    const b = await q.acquire();
    const take = (name: string) => q.acquire(undefined, (p) => positions[name].push(p)).then((r) => (order.push(name), r));
    const c = take('c');
    const d = take('d');
    const e = take('e');
    await flush();
    assert.deepEqual(positions, { c: [1], d: [2], e: [3] });
    assert.equal(q.running, 2);
    assert.equal(q.waiting, 3);
    a();
    a(); // a second release does nothing
    const rc = await c;
    await flush();
    assert.deepEqual(order, ['c']);
    assert.deepEqual(positions, { c: [1], d: [2, 1], e: [3, 2] });
    assert.equal(q.running, 2);
    b();
    rc();
    await Promise.all([d, e]);
    assert.deepEqual(order, ['c', 'd', 'e']);
    assert.equal(q.waiting, 0);
  });

  it('removes a waiter whose signal aborts and moves those behind it up', async () => {
    const changes: [number, number][] = [];
    const q = new PullQueue(1, (r, w) => changes.push([r, w]));
    const first = await q.acquire();
    const ctl = new AbortController();
    const pos: number[] = [];
    const gone = q.acquire(ctl.signal);
    const behind = q.acquire(undefined, (p) => pos.push(p));
    ctl.abort(new AgentError('Cancelled', 'caller left'));
    await assert.rejects(gone, /caller left/);
    assert.deepEqual(pos, [2, 1]);
    first();
    const r = await behind;
    r();
    assert.equal(q.running, 0);
    assert.deepEqual(changes.at(-1), [0, 0]);
  });

  it('refuses a limit below 1', () => {
    assert.throws(() => new PullQueue(0), /positive integer/);
  });
});
