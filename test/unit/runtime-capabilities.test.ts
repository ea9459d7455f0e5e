// What the engine and the pull service do differently by the runtime's capabilities (never by its kind),
// and the Docker adapter's name swap that stands behind swapNames/restoreNames.
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import type { ProgressSource } from '../../src/runtime/progress-source.js';
import { ImagePullService } from '../../src/pull/pull-service.js';
import { replacementName, restoreNames, swapNames, type Renamer } from '../../src/runtime/docker/name-swap.js';
import { FakeNode, runOnManualClock as run } from '../support/executor-fakes.js';
import { FakeRuntime, ManualClock } from '../support/pull-fakes.js';

describe('runtime capabilities: restart executor', () => {
  it('rolls back by starting the old container again where the runtime restarts stopped containers', async () => {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    node.restartsStopped = true;
    const old = node.add('app', 'app:v1');
    const op = await run(node, clock, node.operation(old, 'crash:1'));
    assert.equal(op.containers[0].step, 'RolledBack', op.containers[0].error);
    assert.equal(op.containers[0].rollbackId, old.id, 'the same container runs again');
    assert.deepEqual([...node.containers.values()].map((c) => [c.id, c.image, c.state]), [[old.id, 'app:v1', 'running']]);
  });

  it('rolls back by creating a new instance from the old config where a container runs once', async () => {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    const old = node.add('app', 'app:v1');
    const op = await run(node, clock, node.operation(old, 'crash:1'));
    assert.equal(op.containers[0].step, 'RolledBack', op.containers[0].error);
    assert.notEqual(op.containers[0].rollbackId, old.id);
    assert.deepEqual([...node.containers.values()].map((c) => [c.id, c.image, c.state]), [[op.containers[0].rollbackId, 'app:v1', 'running']]);
  });

  it('asks the runtime to swap names once the old container is stopped, and to restore them on rollback', async () => {
    const clock = new ManualClock();
    const node = new FakeNode(clock);
    node.restartsStopped = true;
    const old = node.add('app', 'app:v1');
    const op = node.operation(old, 'crash:1');
    op.containers[0].oldRuntimeName = 'web';
    await run(node, clock, op);
    assert.deepEqual(
      node.swaps.map((s) => [s.call, s.swap.oldId, s.swap.name, s.swap.tag, s.swap.newId !== '']),
      [
        ['swap', old.id, 'web', 'op-1', true],
        ['restore', old.id, 'web', 'op-1', true],
      ],
    );
  });
});

describe('runtime capabilities: pull service', () => {
  function tracking(): { source: ProgressSource; tracked: string[] } {
    const tracked: string[] = [];
    return {
      tracked,
      source: {
        track: (ref, call) => {
          tracked.push(ref);
          return call();
        },
        close: () => undefined,
      },
    };
  }

  for (const [kind, reports] of [['cri', false], ['docker', true]] as const) {
    it(`${reports ? 'does not use' : 'uses'} the progress source when the runtime's pull ${reports ? 'reports' : 'does not report'} progress (${kind} fake)`, async () => {
      const rt = new FakeRuntime(kind);
      rt.autoFinish = () => ({});
      const { source, tracked } = tracking();
      const svc = new ImagePullService({ runtime: rt.asRuntime(), progressSource: source, backoff: { initialMs: 1, maxMs: 2, jitter: 0 }, metricsRegistry: new Registry() });
      const [res] = await svc.pull({ images: ['127.0.0.1:5000/inplace/app:v1'] }, () => undefined);
      assert.equal(res.phase, 'Done', res.error);
      assert.deepEqual(tracked, reports ? [] : ['127.0.0.1:5000/inplace/app:v1']);
    });
  }
});

describe('Docker name swap', () => {
  function names(init: Record<string, string>): { r: Renamer; names: Map<string, string>; renames: number } {
    const m = new Map(Object.entries(init));
    const out = { names: m, renames: 0, r: undefined as unknown as Renamer };
    out.r = {
      nameOf: async (id) => m.get(id),
      rename: async (id, name) => {
        if ([...m.values()].includes(name)) throw new Error(`name ${name} is taken`);
        out.renames++;
        m.set(id, name);
      },
    };
    return out;
  }

  it('swaps and restores; a second run of either changes nothing; a gone container is skipped', async () => {
    const tmp = replacementName('web', 't1')!;
    const n = names({ old: 'web', new: tmp });
    const swap = { oldId: 'old', newId: 'new', name: 'web', tag: 't1' };
    await swapNames(n.r, swap);
    assert.equal(n.names.get('new'), 'web');
    assert.notEqual(n.names.get('old'), 'web');
    const after = n.renames;
    await swapNames(n.r, swap);
    assert.equal(n.renames, after, 'nothing renamed twice');
    await restoreNames(n.r, swap);
    assert.deepEqual(Object.fromEntries(n.names), { old: 'web', new: tmp });
    await restoreNames(n.r, { ...swap, newId: 'gone' });
    assert.deepEqual(Object.fromEntries(n.names), { old: 'web', new: tmp });
  });

  it('needs no name where the old container had none', async () => {
    assert.equal(replacementName('', 't1'), undefined);
    const n = names({ old: 'x' });
    await swapNames(n.r, { oldId: 'old', newId: 'new', name: '', tag: 't1' });
    assert.equal(n.renames, 0);
  });
});
