import assert from 'node:assert/strict';
import { withCallDeadlines } from '../../src/runtime/call-deadline.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { AgentError } from '../../src/errors.js';
import { ManualClock, flush } from '../support/manual-timers.js';

/** A runtime whose calls never answer (and one that answers), as far as these tests call it. */
const never = () => new Promise<never>(() => undefined);
const wedged = { kind: 'cri', version: never, listImages: () => Promise.resolve([]), stopContainer: never, exec: never, pullImage: never, replacementName: () => undefined } as unknown as Runtime;

/** Settles p's outcome into a list as the clock moves. */
function track(p: Promise<unknown>): unknown[] {
  const out: unknown[] = [];
  p.then((v) => out.push(v), (e: unknown) => out.push(e));
  return out;
}

describe('runtime calls after start-up have a deadline (call-deadline.ts)', () => {
  it('a prompt call fails with DeadlineExceeded naming it and the socket after the deadline; one that answers is passed through', async () => {
    const clock = new ManualClock();
    const rt = withCallDeadlines(wedged, 'unix:///run/x.sock', 1000, clock);
    const out = track(rt.version());
    await clock.advance(999);
    assert.deepEqual(out, []);
    await clock.advance(1);
    await flush();
    assert.ok(AgentError.is(out[0], 'DeadlineExceeded'));
    assert.equal((out[0] as Error).message, 'container runtime at unix:///run/x.sock did not answer version within 1s');
    assert.deepEqual(await rt.listImages(), []);
    assert.equal(rt.kind, 'cri');
  });

  it("a stop gets its grace period on top, an exec its timeout; an exec without one and a pull are left unbounded", async () => {
    const clock = new ManualClock();
    const rt = withCallDeadlines(wedged, 'unix:///run/x.sock', 1000, clock);
    const stop = track(rt.stopContainer('c', 30));
    const exec = track(rt.exec('c', ['true'], 5));
    const forever = track(rt.exec('c', ['true'], 0));
    const pull = track(rt.pullImage('x:1'));
    await clock.advance(5999);
    assert.deepEqual([stop, exec], [[], []]);
    await clock.advance(1);
    await flush();
    assert.match(String(exec[0]), /did not answer exec within 6s/);
    await clock.advance(25_000);
    await flush();
    assert.match(String(stop[0]), /did not answer stopContainer within 31s/);
    await clock.advance(3_600_000);
    await flush();
    assert.deepEqual([forever, pull], [[], []]);
  });
});
