import assert from 'node:assert/strict';
import type { ContainerStep } from '../../src/engine/operation.js';
import type { RestartStrategy } from '../../src/engine/restart-strategy.js';
import { CommonSteps } from '../../src/engine/operation.js';
import { OPERATION_LABEL } from '../../src/engine/restart-plan.js';
import { fakeExecutor, FakeNode } from '../support/executor-fakes.js';
import { ManualClock } from '../support/pull-fakes.js';

describe('restart executor: the loop around the strategies', () => {
  /** A strategy that only records that it was asked to advance a container. */
  function recording(name: 'standalone' | 'kubelet'): RestartStrategy & { advanced: string[] } {
    const advanced: string[] = [];
    return {
      name,
      steps: CommonSteps,
      advanced,
      claim: () => Promise.resolve(true),
      advance: async (_op, t, ctx) => {
        advanced.push(t.name);
        ctx.mark('Done');
        return true;
      },
    };
  }

  for (const strategy of ['standalone', 'kubelet'] as const) {
    it(`a ${strategy} container that stopped before its turn fails untouched, reason ContainerChangedMeanwhile, without its strategy being asked`, async () => {
      const clock = new ManualClock();
      const node = new FakeNode(clock);
      const old = node.add('app', 'app:v1');
      old.state = 'exited';
      const s = recording(strategy);
      const steps: ContainerStep[] = [];
      const executor = fakeExecutor(node, clock, { strategies: [s], afterStep: (_o, _t, step) => steps.push(step) });
      const op = node.operation(old, 'app:v2');
      op.containers[0].strategy = strategy;
      await clock.until(executor.run(op), 50);
      assert.equal(op.state, 'Failed');
      assert.equal(op.reason, 'ContainerChangedMeanwhile');
      assert.equal(op.containers[0].reason, 'ContainerChangedMeanwhile');
      assert.match(op.error ?? '', /^ContainerChangedMeanwhile: container "app" \(c1\) is exited; it was not touched$/);
      assert.deepEqual(s.advanced, []);
      assert.deepEqual(steps, ['Failed']);
      assert.deepEqual([...node.containers.values()].map((c) => [c.id, c.image, c.state]), [['c1', 'app:v1', 'exited']]);
    });
  }

  it('after a failure, a container replaced together with the failed one goes on to its end; one still Waiting is not touched', async () => {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    const a = node.add('a', 'app:v1');
    const b = node.add('b', 'app:v1');
    const c = node.add('c', 'app:v1');
    const op = node.operation(a, 'app:v1');
    const [ta] = op.containers;
    const tb = { ...structuredClone(ta), name: 'b', oldId: b.id };
    const tc = { ...structuredClone(ta), name: 'c', oldId: c.id };
    op.containers.push(tb, tc);
    op.request.containers = ['a', 'b', 'c'];
    for (const t of op.containers) t.strategy = 'kubelet';
    const advanced: string[] = [];
    const s: RestartStrategy = {
      name: 'kubelet',
      steps: CommonSteps,
      claim: () => Promise.resolve(true),
      advance: async (_op, t, ctx) => {
        advanced.push(t.name);
        if (t.name !== 'a') {
          ctx.mark('Done');
          return true;
        }
        // a carries b along (stopped together), then fails.
        ctx.markOf(tb, 'Verifying');
        t.reason = 'ReplacementExitedDuringMinReady';
        t.error = 'a exited';
        await ctx.step('Failed');
        return false;
      },
    };
    const executor = fakeExecutor(node, clock, { strategies: [s] });
    await clock.until(executor.run(op), 50);
    assert.equal(op.state, 'Failed');
    assert.equal(op.reason, 'ReplacementExitedDuringMinReady');
    assert.deepEqual(advanced, ['a', 'b']);
    assert.equal(tb.step, 'Done');
    assert.equal(tc.step, 'Waiting');
    assert.match(op.error ?? '', /^a exited; already replaced: b; the others were not touched$/);
  });

  it('a journal record at a step its strategy does not have fails the operation, touching nothing', async () => {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    const old = node.add('app', 'app:v1');
    const s = recording('kubelet');
    const executor = fakeExecutor(node, clock, { strategies: [s] });
    const op = node.operation(old, 'app:v2');
    op.state = 'Recreating';
    op.containers[0].strategy = 'kubelet';
    op.containers[0].step = 'Creating';
    await clock.until(executor.run(op), 50);
    assert.equal(op.state, 'Failed');
    assert.match(op.error ?? '', /step Creating, which the kubelet strategy does not have/);
    assert.deepEqual(s.advanced, []);
    assert.deepEqual([...node.containers.values()].map((c) => [c.image, c.state]), [['app:v1', 'running']]);
  });
});

describe('standalone strategy: Creating published while the create runs, journaled with Stopping', () => {
  it('a resumed operation still at Waiting finds the replacement a dead agent created, and creates none', async () => {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    const old = node.add('app', 'app:v1');
    const op = node.operation(old, 'app:v2', { minReadyMs: 0 });
    // The agent died after its create, before its Creating record landed: the record says Waiting.
    const stray = await node.runtime().createContainer('p', { ...old.spec, image: 'app:v2', attempt: 1, labels: { [OPERATION_LABEL]: op.id } });
    const steps: ContainerStep[] = [];
    const executor = fakeExecutor(node, clock, { afterStep: (_o, _t, step) => steps.push(step) });
    await clock.until(executor.run(op, { resumed: true }), 50);
    assert.equal(op.state, 'Succeeded', op.error);
    assert.equal(op.containers[0].newId, stray);
    assert.deepEqual([...node.containers.values()].map((c) => [c.id, c.image, c.state]), [[stray, 'app:v2', 'running']]);
    assert.deepEqual(steps.slice(0, 3), ['Creating', 'Created', 'Stopping']);
  });

  it('a new operation writes nothing between its Pending record and Stopping, whose record holds Creating and Created', async () => {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    const old = node.add('app', 'app:v1');
    const op = node.operation(old, 'app:v2', { minReadyMs: 0 });
    const journaled: string[][] = [];
    const executor = fakeExecutor(node, clock, { store: { record: async (o) => void journaled.push(o.containers[0].steps.map((x) => x.step)) } });
    await clock.until(executor.run(op), 50);
    assert.equal(op.state, 'Succeeded', op.error);
    assert.deepEqual(journaled[0], ['Waiting', 'Creating', 'Created', 'Stopping'], 'the first write is Stopping, with the steps before it');
    assert.deepEqual([...node.containers.values()].map((c) => [c.image, c.state]), [['app:v2', 'running']]);
  });
});
