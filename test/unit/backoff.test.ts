import assert from 'node:assert/strict';
import { Backoff, backoffDelay } from '../../src/backoff.js';
import { AgentError } from '../../src/errors.js';
import { ManualClock } from '../support/manual-timers.js';

describe('Backoff (the one back-off)', () => {
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
  it('gives the same delays without jitter as the plain formula, for every caller\'s shape', () => {
    for (const shape of [{ initialMs: 250, maxMs: 5000 }, { initialMs: 100, maxMs: 2000 }, { initialMs: 10_000, maxMs: 300_000 }, { initialMs: 500, maxMs: 8000, factor: 3 }]) {
      const b = new Backoff(new ManualClock(), { ...shape, jitter: 0 });
      for (let r = 1; r <= 12; r++) assert.equal(b.delay(r), Math.min(shape.maxMs, shape.initialMs * (shape.factor ?? 2) ** (r - 1)));
      assert.equal(backoffDelay(1, shape), shape.initialMs);
      assert.equal(backoffDelay(0, shape), shape.initialMs, 'a retry number below 1 is the first');
      assert.equal(backoffDelay(60, shape), shape.maxMs);
    }
  });
});
