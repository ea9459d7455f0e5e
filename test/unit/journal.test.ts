import type { KubeletRequest } from '../../src/kube/kubelet/steps.js';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Journal } from '../../src/engine/journal.js';
import { AgentError } from '../../src/errors.js';
import type { Operation } from '../../src/engine/operation.js';

const op = (id: string, createdAt: string, state: Operation['state'] = 'Pending'): Operation => ({
  id,
  podId: 'p',
  podName: 'ns/p',
  podIp: '',
  state,
  request: { pod: 'ns/p', containers: ['c'], images: {}, graceSeconds: 1, minReadyMs: 0, timeoutMs: 1000 },
  containers: [],
  createdAt,
  updatedAt: createdAt,
});

describe('Journal', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads back what it wrote, oldest first, with the last write of each record winning', async () => {
    const j = new Journal(dir);
    await j.open();
    const a = op('a', '2026-01-01T00:00:02Z');
    await Promise.all([j.write(op('b', '2026-01-01T00:00:01Z')), j.write(a, 'after')]);
    // Many overlapping writes of one record, synced, not, and with the directory synced behind the call: the
    // file ends with the newest state.
    const writes: Promise<void>[] = [];
    for (const state of ['Pulling', 'Recreating', 'Verifying', 'Succeeded'] as const) {
      a.state = state;
      writes.push(j.write(structuredClone(a), state === 'Recreating' ? 'after' : state !== 'Succeeded'));
    }
    await Promise.all(writes);
    const back = await j.readAll();
    assert.deepEqual(back.map((o) => [o.id, o.state]), [['b', 'Pending'], ['a', 'Succeeded']]);
    assert.deepEqual(fs.readdirSync(path.join(dir, 'operations')).sort(), ['a.json', 'b.json'], 'no temp files left');
  });

  it('skips and reports a damaged record instead of failing start-up', async () => {
    const j = new Journal(dir);
    await j.open();
    await j.write(op('good', '2026-01-01T00:00:00Z'));
    fs.writeFileSync(path.join(dir, 'operations', 'bad.json'), '{"id": "bad", "sta');
    const bad: string[] = [];
    const back = await j.readAll((file) => bad.push(file));
    assert.deepEqual(back.map((o) => o.id), ['good']);
    assert.deepEqual(bad, ['bad.json']);
  });

  it('sets aside records of the wrong shape in operations/corrupt/ and reads the rest', async () => {
    const j = new Journal(dir);
    await j.open();
    const good = op('good', '2026-01-01T00:00:00Z');
    good.containers = [
      { name: 'c', oldId: 'o', oldRuntimeName: '', oldImage: 'i', newImage: 'i', newAttempt: 1, newId: '', rollbackId: '', step: 'Waiting', steps: [{ step: 'Waiting', at: '2026-01-01T00:00:00Z' }] },
    ];
    await j.write(good);
    const shapes: Record<string, unknown> = {
      'null.json': null,
      'array.json': [1, 2],
      'empty.json': {},
      'string.json': 'x',
      'no-containers.json': { ...op('no-containers', '2026-01-01T00:00:00Z'), containers: undefined },
      'bad-state.json': op('bad-state', '2026-01-01T00:00:00Z', 'Exploded' as Operation['state']),
      'bad-date.json': op('bad-date', 'yesterday'),
      'bad-step.json': { ...good, id: 'bad-step', containers: [{ ...good.containers[0], step: 'Dancing' }] },
      'other-name.json': op('not-its-name', '2026-01-01T00:00:00Z'),
    };
    for (const [f, v] of Object.entries(shapes)) fs.writeFileSync(path.join(dir, 'operations', f), JSON.stringify(v));
    const bad: [string, string][] = [];
    const back = await j.readAll((file, err, movedTo) => bad.push([file, String(movedTo)]));
    assert.deepEqual(back.map((o) => o.id), ['good']);
    assert.deepEqual(bad.map(([f]) => f).sort(), Object.keys(shapes).sort());
    for (const [f, to] of bad) assert.equal(to, path.join(dir, 'operations', 'corrupt', f));
    assert.deepEqual(fs.readdirSync(path.join(dir, 'operations')).sort(), ['corrupt', 'good.json']);
    // A second start finds nothing more to set aside, and an older copy is never overwritten.
    fs.writeFileSync(path.join(dir, 'operations', 'null.json'), 'null');
    const again: string[] = [];
    await j.readAll((_f, _e, movedTo) => again.push(String(movedTo)));
    assert.equal(again.length, 1);
    assert.notEqual(again[0], path.join(dir, 'operations', 'corrupt', 'null.json'));
    assert.equal(fs.readdirSync(path.join(dir, 'operations', 'corrupt')).length, Object.keys(shapes).length + 1);
  });

  it('keeps fields it does not know (a newer agent may have written them)', async () => {
    const j = new Journal(dir);
    await j.open();
    fs.writeFileSync(path.join(dir, 'operations', 'n.json'), JSON.stringify({ ...op('n', '2026-01-01T00:00:00Z'), reason: 'Future' }));
    const [back] = await j.readAll();
    assert.equal((back as unknown as { reason: string }).reason, 'Future');
  });

  it('reads back a kubelet-strategy record at every step of that strategy (none is set aside as corrupt)', async () => {
    const j = new Journal(dir);
    await j.open();
    for (const step of ['Draining', 'Patching', 'Patched', 'Stopping', 'Verifying'] as const) {
      const k = op(`k-${step}`, '2026-01-01T00:00:00Z', 'Recreating');
      k.request = { ...k.request, failurePolicy: 'Rollback', drainMs: 5000 } as KubeletRequest;
      k.containers = [{ name: 'c', strategy: 'kubelet', oldId: 'o', oldRuntimeName: 'c', oldImage: 'r/a:1', newImage: 'r/a:2', newAttempt: 1, newId: '', rollbackId: '', step, steps: [{ step, at: '2026-01-01T00:00:00Z' }] }];
      await j.write(k);
    }
    const back = await j.readAll();
    assert.deepEqual(back.map((o) => o.containers[0]?.step).sort(), ['Draining', 'Patched', 'Patching', 'Stopping', 'Verifying']);
    assert.equal(fs.existsSync(path.join(dir, 'operations', 'corrupt')) && fs.readdirSync(path.join(dir, 'operations', 'corrupt')).length > 0, false);
  });

  it('removes records', async () => {
    const j = new Journal(dir);
    await j.open();
    await j.write(op('x', '2026-01-01T00:00:00Z'));
    await j.remove('x');
    assert.deepEqual(await j.readAll(), []);
  });
});

describe('Journal failures', () => {
  it('reports a journal it cannot write as an agent error naming the directory', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-'));
    try {
      const j = new Journal(dir);
      await j.open();
      fs.rmSync(path.join(dir, 'operations'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'operations'), 'not a directory');
      await assert.rejects(j.write(op('a', '2026-01-01T00:00:00Z')), (e: unknown) => e instanceof AgentError && e.kind === 'Internal' && e.message.includes(path.join(dir, 'operations')));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
