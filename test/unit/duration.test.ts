import assert from 'node:assert/strict';
import { durationFlagMs, formatDuration, parseDuration } from '../../src/duration.js';

describe('durations', () => {
  it('parses units and compounds; a bare number only as 0', () => {
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('30s'), 30_000);
    assert.equal(parseDuration('1m30s'), 90_000);
    assert.equal(parseDuration('1.5s'), 1500);
    assert.equal(parseDuration('0'), 0);
    assert.throws(() => parseDuration('2'), /"2" needs a unit: "2s" for seconds, "2ms" for milliseconds/);
  });

  it('one rule for every flag: a unit, 0 only where it means something, at most 596h, the flag named', () => {
    assert.equal(durationFlagMs('--interval', '2s'), 2000);
    assert.throws(() => durationFlagMs('--interval', '5'), /^AgentError: --interval needs a unit: "5s" for seconds/);
    assert.throws(() => durationFlagMs('--interval', 'banana'), /^AgentError: --interval: invalid duration "banana"/);
    assert.throws(() => durationFlagMs('--interval', '0'), /^AgentError: --interval must be between 1ms and 596h, got "0"/);
    assert.equal(durationFlagMs('--grace', '0', { zeroMeans: 'stop at once' }), 0);
    assert.throws(() => durationFlagMs('--grace', '700h', { zeroMeans: 'stop at once' }), /--grace must be 0 \(stop at once\) or between 1ms and 596h, got "700h"/);
    assert.throws(() => durationFlagMs('--refresh', '5s', { zeroMeans: 'never', minMs: 10_000 }), /--refresh must be 0 \(never\) or between 10s and 596h, got "5s"/);
  });
  it('refuses junk naming it', () => {
    assert.throws(() => parseDuration('5 minutes'), /"5 minutes"/);
    assert.throws(() => parseDuration('s'), /invalid duration/);
  });
  it('formats', () => {
    assert.equal(formatDuration(850), '850ms');
    assert.equal(formatDuration(1234), '1.2s');
    assert.equal(formatDuration(184_000), '3m04s');
  });
});
