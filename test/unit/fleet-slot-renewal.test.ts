import assert from 'node:assert/strict';
import type { SlotLease } from '../../src/controllers/image-prewarm/fleet-api.js';
import { renewWhilePulling, type SlotHold } from '../../src/controllers/image-prewarm/slot-renewal.js';
import { ManualClock, flush } from '../support/manual-timers.js';
import { memoryLogger } from '../support/memory-logger.js';

const lease = (renewMs: number, rv = '1'): SlotLease => ({ name: 'web-slot-0', prewarm: 'web', holder: 'n1', renewMs, acquireMs: 0, durationSeconds: 15, resourceVersion: rv });

/** A slot claimer whose renewals the test answers: each call is recorded with its time and waits for an answer. */
function scriptedSlots(clock: ManualClock) {
  const calls: { at: number; answer: (l: SlotLease | undefined | Error) => void }[] = [];
  const slots = {
    renew: (_l: SlotLease) =>
      new Promise<SlotLease | undefined>((resolve, reject) => {
        calls.push({ at: clock.now(), answer: (a) => (a instanceof Error ? reject(a) : resolve(a)) });
      }),
  };
  return { slots, calls };
}

describe('fleet pre-warm: the held slot is renewed on the injected clock', () => {
  it('renews every third of the lease, at fixed times from when the slot was taken', async () => {
    const clock = new ManualClock();
    const t0 = clock.now();
    const { slots, calls } = scriptedSlots(clock);
    const { logger, lines } = memoryLogger();
    const hold: SlotHold = { lease: lease(t0) };
    const r = renewWhilePulling({ slots, clock, log: logger, leaseSeconds: 15 }, 'web', hold);
    await clock.advance(4999);
    assert.equal(calls.length, 0, 'not before a third of the lease');
    await clock.advance(1);
    assert.deepEqual(calls.map((c) => c.at - t0), [5000]);
    calls[0].answer(lease(clock.now(), '2'));
    await flush();
    assert.equal(hold.lease?.resourceVersion, '2', 'the hold keeps the lease as renewed (its new version)');
    await clock.advance(5000);
    assert.deepEqual(calls.map((c) => c.at - t0), [5000, 10_000]);
    // A slow renewal: no second one while it is under way, and the turns it overran are skipped.
    await clock.advance(7000);
    assert.equal(calls.length, 2, 'never two renewals at once');
    assert.ok(hold.renewing, 'the renewal under way is there for release() to wait on');
    calls[1].answer(lease(clock.now(), '3'));
    await flush();
    assert.equal(hold.renewing, undefined);
    await clock.advance(2999);
    assert.equal(calls.length, 2);
    await clock.advance(1);
    assert.deepEqual(calls.map((c) => c.at - t0), [5000, 10_000, 20_000]);
    // A failed renewal is said and tried at the next turn.
    calls[2].answer(new Error('API server away'));
    await clock.advance(5000);
    assert.deepEqual(calls.map((c) => c.at - t0), [5000, 10_000, 20_000, 25_000]);
    assert.equal(hold.lease?.resourceVersion, '3', 'a failed renewal keeps the lease as it was');
    assert.ok(lines.some((l) => l.includes('prewarm slot renewal failed') && l.includes('API server away')));
    r.stop();
    calls[3].answer(lease(clock.now(), '4'));
    await r.done;
    assert.equal(hold.lease?.resourceVersion, '4', 'a renewal sent before stop() still lands in the hold');
    assert.equal(calls.length, 4);
  });

  it('stops renewing once the lease was taken by another node, and says so', async () => {
    const clock = new ManualClock();
    const { slots, calls } = scriptedSlots(clock);
    const { logger, lines } = memoryLogger();
    const hold: SlotHold = { lease: lease(clock.now()) };
    const r = renewWhilePulling({ slots, clock, log: logger, leaseSeconds: 15 }, 'web', hold);
    await clock.advance(5000);
    calls[0].answer(undefined);
    await r.done;
    assert.equal(hold.lease, undefined);
    assert.deepEqual(clock.pending(), [], 'no timer left');
    assert.ok(lines.some((l) => l.includes('prewarm slot lost while pulling')));
    await clock.advance(60_000);
    assert.equal(calls.length, 1);
  });

  it('stop() ends the renewals: no timer is left and nothing is renewed after it', async () => {
    const clock = new ManualClock();
    const { slots, calls } = scriptedSlots(clock);
    const hold: SlotHold = { lease: lease(clock.now()) };
    const r = renewWhilePulling({ slots, clock, log: memoryLogger().logger, leaseSeconds: 15 }, 'web', hold);
    await clock.advance(2000);
    r.stop();
    await r.done;
    assert.deepEqual(clock.pending(), []);
    await clock.advance(60_000);
    assert.equal(calls.length, 0);
  });

  it('a short lease is renewed at most once a second', async () => {
    const clock = new ManualClock();
    const { slots, calls } = scriptedSlots(clock);
    const r = renewWhilePulling({ slots, clock, log: memoryLogger().logger, leaseSeconds: 1 }, 'web', { lease: lease(clock.now()) });
    await clock.sleeping((x) => x.ms === 1000, 'the first renewal turn');
    await clock.advance(1000);
    assert.equal(calls.length, 1);
    r.stop();
    calls[0].answer(lease(clock.now(), '2'));
    await r.done;
  });
});
