import assert from 'node:assert/strict';
import { KeyedQueue } from '../../src/engine/keyed-queue.js';
import { canTransition, isTerminal } from '../../src/engine/operation.js';

describe('KeyedQueue', () => {
  it('runs tasks of one key one at a time in order, and other keys alongside', async () => {
    const q = new KeyedQueue();
    const log: string[] = [];
    const gate: Array<() => void> = [];
    const task = (name: string) => () => new Promise<void>((resolve) => {
      log.push(`start ${name}`);
      gate.push(() => {
        log.push(`end ${name}`);
        resolve();
      });
    });
    const a1 = q.run('a', task('a1'));
    const a2 = q.run('a', task('a2'));
    const b1 = q.run('b', task('b1'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(log, ['start a1', 'start b1']);
    assert.equal(q.depth('a'), 2);
    gate.shift()!();
    await a1;
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(log, ['start a1', 'start b1', 'end a1', 'start a2']);
    gate.shift()!();
    gate.shift()!();
    await Promise.all([a2, b1]);
    assert.equal(q.depth('a'), 0);
  });

  it('keeps going after a task fails', async () => {
    const q = new KeyedQueue();
    await assert.rejects(q.run('k', async () => { throw new Error('boom'); }), /boom/);
    assert.equal(await q.run('k', async () => 7), 7);
  });
});

describe('operation state machine', () => {
  it('allows only the documented transitions', () => {
    assert.ok(canTransition('Pending', 'Pulling'));
    assert.ok(canTransition('Pulling', 'Recreating'));
    assert.ok(canTransition('Recreating', 'RolledBack'));
    assert.ok(!canTransition('Succeeded', 'Pending'));
    assert.ok(!canTransition('Pending', 'Succeeded'));
    assert.ok(isTerminal('Cancelled') && isTerminal('Failed') && !isTerminal('Verifying'));
  });
});
