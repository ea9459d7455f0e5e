import assert from 'node:assert/strict';
import { PullQueue } from '../../src/pull/pull-queue.js';
import { AgentError } from '../../src/errors.js';
import { flush } from '../support/pull-fakes.js';

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
