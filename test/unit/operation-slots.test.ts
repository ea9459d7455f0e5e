import assert from 'node:assert/strict';
import { OperationSlots } from '../../src/engine/operation-slots.js';

describe('OperationSlots', () => {
  it('lets max holders through and grants the rest in arrival order', async () => {
    const slots = new OperationSlots(2);
    const order: string[] = [];
    const a = await slots.acquire();
    const b = await slots.acquire();
    const waits = ['c', 'd', 'e'].map((n) => slots.acquire().then((r) => (order.push(n), r)));
    assert.equal(slots.running, 2);
    assert.equal(slots.waiting, 3);
    a();
    a(); // a second release gives nothing back twice
    const c = await waits[0];
    assert.deepEqual(order, ['c']);
    assert.equal(slots.running, 2);
    b();
    c();
    const [, d, e] = await Promise.all(waits);
    assert.deepEqual(order, ['c', 'd', 'e']);
    d();
    e();
    assert.equal(slots.running, 0);
    assert.equal(slots.waiting, 0);
  });

  it('drops a waiter whose signal aborts (a drain) and refuses a bound below 1', async () => {
    const slots = new OperationSlots(1);
    const held = await slots.acquire();
    const ctl = new AbortController();
    const gone = slots.acquire(ctl.signal);
    const next = slots.acquire();
    ctl.abort(new Error('draining'));
    await assert.rejects(gone, /draining/);
    held();
    (await next)();
    assert.equal(slots.running, 0);
    assert.throws(() => new OperationSlots(0), RangeError);
  });
});
