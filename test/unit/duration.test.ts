import assert from 'node:assert/strict';
import { formatDuration, parseDuration } from '../../src/duration.js';

describe('durations', () => {
  it('parses units, compounds and bare seconds', () => {
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('30s'), 30_000);
    assert.equal(parseDuration('1m30s'), 90_000);
    assert.equal(parseDuration('2'), 2000);
    assert.equal(parseDuration('1.5s'), 1500);
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
