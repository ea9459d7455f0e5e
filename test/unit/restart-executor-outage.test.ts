import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import type { Operation } from '../../src/engine/operation.js';
import { fakeExecutor, FakeNode, runOnManualClock as run } from '../support/executor-fakes.js';
import { ManualClock } from '../support/pull-fakes.js';

describe('restart executor: a runtime briefly away', () => {
  it('one Unavailable from the status call during min-ready does not fail a healthy replacement', async () => {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    const old = node.add('app', 'app:v1');
    const op = await run(node, clock, node.operation(old, 'app:v2'), (step) => {
      if (step === 'Verifying') node.failOnce.set('containerState', new AgentError('Unavailable', 'UNAVAILABLE: connection refused'));
    });
    assert.equal(op.state, 'Succeeded', op.error);
    assert.deepEqual([...node.containers.values()].map((c) => [c.image, c.state]), [['app:v2', 'running']]);
  });

  for (const [step, seconds] of [['Stopping', 20], ['Starting', 20], ['Verifying', 20], ['RemovingOld', 20], ['Creating', 20]] as const) {
    it(`a runtime away for ${seconds} s from step ${step} is waited for: Succeeded, one instance`, async () => {
      const clock = new ManualClock();
      const node = new FakeNode(clock);
      const old = node.add('app', 'app:v1');
      let backAt = Infinity;
      node.away = () => backAt !== Infinity && clock.now() < backAt;
      const op = await run(node, clock, node.operation(old, 'app:v2'), (s) => {
        if (s === step && backAt === Infinity) backAt = clock.now() + seconds * 1000;
      });
      node.away = () => false;
      assert.equal(op.state, 'Succeeded', op.error);
      assert.deepEqual([...node.containers.values()].map((c) => [c.image, c.state]), [['app:v2', 'running']]);
    });
  }

  it('a rollback waits for a runtime away for 60 s (longer than the old 7.5 s of retries): old config running, nothing left over', async () => {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    const old = node.add('app', 'app:v1');
    let backAt = Infinity;
    node.away = () => backAt !== Infinity && clock.now() < backAt;
    const op = await run(node, clock, node.operation(old, 'crash:1'), (s) => {
      if (s === 'RollingBack' && backAt === Infinity) backAt = clock.now() + 60_000;
    });
    assert.equal(op.state, 'Failed');
    assert.equal(op.containers[0].step, 'RolledBack', op.containers[0].error);
    assert.deepEqual([...node.containers.values()].map((c) => [c.image, c.state]), [['app:v1', 'running']]);
  });

  it('a runtime that stays away past the deadline fails the operation with a message saying so', async () => {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    const old = node.add('app', 'app:v1');
    let away = false;
    node.away = () => away;
    // Away from the create on (Creating is journaled while the create runs, so not from the step's journal write).
    node.onCall = (method) => {
      if (method === 'createContainer') away = true;
    };
    const op = await run(node, clock, node.operation(old, 'app:v2', { timeoutMs: 30_000 }));
    assert.equal(op.state, 'Failed');
    assert.match(op.error ?? '', /CreateContainerFailed: could not create the replacement of "app": the runtime stayed unavailable for \d+(\.\d)?s/);
  });
});

describe('restart executor: planning again while the runtime is away', () => {
  /** Runs op planned again (as a queued or resumed operation), the runtime away from the start for awayMs. */
  async function replanned(awayMs: number, timeoutMs = 600_000): Promise<{ op: Operation; node: FakeNode }> {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    const old = node.add('app', 'app:v1');
    const backAt = clock.now() + awayMs;
    node.away = () => clock.now() < backAt;
    const rt = node.runtime();
    const executor = fakeExecutor(node, clock, {
      runtime: rt,
      // As the engine's planner: the pod and its containers read again.
      planner: {
        planOnPodNow: async (o) => {
          await rt.getPod(o.podId);
          await rt.listContainers({ podId: o.podId });
        },
      },
    });
    const op = node.operation(old, 'app:v2', { timeoutMs });
    await clock.until(executor.run(op, { planAgain: true }), 50);
    return { op, node };
  }

  it('a runtime away for 20 s when a queued operation is planned again is waited for: Succeeded, not "the pod changed"', async () => {
    const { op, node } = await replanned(20_000);
    assert.equal(op.state, 'Succeeded', op.error);
    assert.deepEqual([...node.containers.values()].map((c) => [c.image, c.state]), [['app:v2', 'running']]);
  });

  it('a runtime that stays away past the deadline fails the operation saying so, with nothing changed', async () => {
    const { op, node } = await replanned(3_600_000, 30_000);
    assert.equal(op.state, 'Failed');
    assert.equal(op.errorKind, 'Unavailable');
    assert.equal(op.reason, 'DeadlineExceeded');
    assert.match(op.error ?? '', /^could not plan the operation again: the runtime stayed unavailable for \d+(\.\d)?s: .*; nothing was changed$/);
    assert.doesNotMatch(op.error ?? '', /pod changed/);
    assert.deepEqual([...node.containers.values()].map((c) => [c.image, c.state]), [['app:v1', 'running']]);
  });
});
