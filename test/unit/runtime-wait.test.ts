import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import { isTransient, retryDelay, whileUnavailable } from '../../src/engine/runtime-wait.js';
import { ManualClock } from '../support/pull-fakes.js';

const away = () => new AgentError('Unavailable', 'CRI runtime at unix:///c.sock is unavailable (StopContainer): connect ECONNREFUSED');

describe('waiting for a runtime that is briefly away', () => {
  it('only Unavailable is transient', () => {
    assert.equal(isTransient(away()), true);
    for (const kind of ['NotFound', 'FailedPrecondition', 'DeadlineExceeded', 'Internal', 'Aborted'] as const) assert.equal(isTransient(new AgentError(kind, 'x')), false, kind);
    assert.equal(isTransient(new Error('plain')), false);
  });

  it('backs off from 100 ms, doubling, capped at 2 s', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 20].map(retryDelay), [100, 200, 400, 800, 1600, 2000, 2000, 2000]);
  });

  it('calls again while the runtime is away and returns the first answer, on the injected clock', async () => {
    const clock = new ManualClock();
    const start = clock.now();
    const calls: { attempt: number; at: number }[] = [];
    const p = whileUnavailable(
      async (attempt) => {
        calls.push({ attempt, at: clock.now() - start });
        if (clock.now() - start < 6000) throw away();
        return 'stopped';
      },
      { clock, until: start + 60_000, what: 'stop the old container' },
    );
    await clock.advance(10_000);
    assert.equal(await p, 'stopped');
    assert.deepEqual(
      calls.map((c) => c.at),
      [0, 100, 300, 700, 1500, 3100, 5100, 7100],
    );
    assert.deepEqual(
      calls.map((c) => c.attempt),
      [1, 2, 3, 4, 5, 6, 7, 8],
    );
  });

  it('gives up at the time limit with an Unavailable error that says what and for how long', async () => {
    const clock = new ManualClock();
    const start = clock.now();
    let calls = 0;
    const p = whileUnavailable(
      async () => {
        calls++;
        throw away();
      },
      { clock, until: start + 5000, what: 'start the replacement of "app"' },
    );
    const outcome = p.then(
      () => assert.fail('resolved'),
      (err: unknown) => err,
    );
    await clock.advance(6000);
    const err = await outcome;
    assert.ok(AgentError.is(err, 'Unavailable'));
    assert.match(err.message, /^could not start the replacement of "app": the runtime stayed unavailable for 5s: CRI runtime at .* is unavailable/);
    assert.ok(calls >= 5 && calls <= 8, `${calls} calls`);
  });

  it('passes any other error through at once, without waiting', async () => {
    const clock = new ManualClock();
    let calls = 0;
    await assert.rejects(
      whileUnavailable(
        async () => {
          calls++;
          throw new AgentError('FailedPrecondition', 'container is in CONTAINER_EXITED state');
        },
        { clock, until: clock.now() + 60_000, what: 'start' },
      ),
      /CONTAINER_EXITED/,
    );
    assert.equal(calls, 1);
  });
});
