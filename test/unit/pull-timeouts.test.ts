// Timeouts a timer can take: refused at the daemon's edge, cut to 2^31-1 ms inside.
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { daemonCommand, daemonOptions } from '../../src/daemon/options.js';
import { ImagePullService } from '../../src/pull/pull-service.js';
import { FakeRuntime, flush, ManualClock } from '../support/pull-fakes.js';

const IMG = '127.0.0.1:5000/inplace/app:v1';

function parse(args: string[]) {
  const cmd = daemonCommand('test').exitOverride();
  cmd.parse(args, { from: 'user' });
  return daemonOptions(cmd);
}

describe('pull timeouts', () => {
  it('the daemon refuses a pull timeout of 0 or beyond 2^31-1 ms, and accepts the largest one', () => {
    assert.throws(() => parse(['--pull-timeout', '0']), /--pull-timeout must be between 1ms and 596h/);
    assert.throws(() => parse(['--pull-timeout', '600h']), /--pull-timeout must be between/);
    assert.equal(parse(['--pull-timeout', '596h']).pullTimeoutMs, 596 * 3_600_000);
    assert.equal(parse([]).pullTimeoutMs, 30 * 60_000);
  });

  it('the daemon takes a stall timeout of 0 (off) but not one beyond 2^31-1 ms', () => {
    assert.equal(parse(['--pull-stall-timeout', '0']).pullStallTimeoutMs, 0);
    assert.throws(() => parse(['--pull-stall-timeout', '1000h']), /--pull-stall-timeout must be 0 \(no stall deadline\) or between/);
  });

  it('the service refuses a timeout of 0', () => {
    assert.throws(() => new ImagePullService({ runtime: new FakeRuntime().asRuntime(), timeoutMs: 0, metricsRegistry: new Registry() }), /must be positive/);
  });

  it('a huge service or request timeout does not fire at once; a request\'s 0 means the service\'s', async () => {
    for (const [serviceMs, requestMs] of [
      [2 ** 40, undefined],
      [undefined, 2 ** 40],
      [undefined, 0],
    ] as const) {
      const rt = new FakeRuntime();
      const clock = new ManualClock();
      const svc = new ImagePullService({ runtime: rt.asRuntime(), timeoutMs: serviceMs, stallTimeoutMs: 0, metricsRegistry: new Registry(), clock });
      const p = svc.pull({ images: [IMG], timeoutMs: requestMs }, () => undefined);
      const pull = await rt.takePull();
      // A timer longer than 2^31-1 ms would fire at once on the real clock: every one asked for fits.
      const timers = clock.pending();
      assert.ok(timers.length > 0 && timers.every((t) => t.ms >= 1 && t.ms <= 2 ** 31 - 1), `timer-sized: ${JSON.stringify(timers)}`);
      await clock.advance(20 * 60_000); // below the service's default 30 min
      await flush();
      assert.equal(pull.opts.signal?.aborted, false, `service ${serviceMs}, request ${requestMs}`);
      assert.ok((pull.opts.timeoutMs ?? 0) <= 2 ** 31 - 1, 'the runtime call gets a timer-sized deadline');
      pull.finish();
      const [e] = await p;
      assert.equal(e.phase, 'Done');
    }
  });
});
