// The one retry loop (src/retry.ts): tries again after the policy's delay while the failure may heal, at most
// `tries` times, and throws the last failure, or one that cannot heal, as it is.
import assert from 'node:assert/strict';
import type { Clock } from '../../src/clock.js';
import { retry, type RetryPolicy } from '../../src/retry.js';

/** A clock whose sleeps end at once and are written down (ms). */
function recordingClock(): Clock & { slept: number[] } {
  const slept: number[] = [];
  return { slept, now: () => 0, sleep: async (ms) => void slept.push(ms) };
}

describe('retry (the one retry loop)', () => {
  const policy = (over: Partial<RetryPolicy> = {}): RetryPolicy => ({ tries: 4, delay: (n) => 100 * n, retryable: (e) => (e as Error).message.startsWith('away'), ...over });

  it('tries again after each delay until the call succeeds, and says so before each wait', async () => {
    const clock = recordingClock();
    const told: string[] = [];
    const got = await retry(clock, policy({ onRetry: (a, e, ms) => void told.push(`${a}:${(e as Error).message}:${ms}`) }), async (attempt) => {
      if (attempt < 3) throw new Error('away');
      return `ok at ${attempt}`;
    });
    assert.equal(got, 'ok at 3');
    assert.deepEqual(clock.slept, [100, 200]);
    assert.deepEqual(told, ['1:away:100', '2:away:200']);
  });

  it('throws the last failure once the tries are used up', async () => {
    const clock = recordingClock();
    let calls = 0;
    await assert.rejects(retry(clock, policy(), async (attempt) => {
      calls++;
      throw new Error(`away (try ${attempt})`);
    }), /away \(try 4\)/);
    assert.equal(calls, 4);
    assert.deepEqual(clock.slept, [100, 200, 300]);
  });

  it('throws a failure that cannot heal at once, without waiting', async () => {
    const clock = recordingClock();
    let calls = 0;
    await assert.rejects(retry(clock, policy(), async () => {
      calls++;
      throw new Error('refused');
    }), /refused/);
    assert.equal(calls, 1);
    assert.deepEqual(clock.slept, []);
  });

  it('ends the wait when the signal aborts', async () => {
    const ac = new AbortController();
    const clock: Clock = { now: () => 0, sleep: (_ms, signal) => new Promise((_r, reject) => (signal?.aborted ? reject(signal.reason) : signal?.addEventListener('abort', () => reject(signal.reason)))) };
    const p = retry(clock, policy({ signal: ac.signal }), async () => {
      throw new Error('away');
    });
    ac.abort(new Error('stopping'));
    await assert.rejects(p, /stopping/);
  });
});
