import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import type { Operation } from '../../src/engine/operation.js';
import { restartRequestFor } from '../../src/controllers/container-restart/request.js';
import { claimedStatus, refusedStatus, sameStatus, statusFromOperation } from '../../src/controllers/container-restart/status.js';
import { MAX_CONFLICTS, writeStatus, type StatusApi } from '../../src/controllers/container-restart/status-writer.js';
import { operationView } from '../../src/cli/operation-view.js';
import { containerRestartFor } from '../../src/cli/kube-restart-command.js';
import { refusal, type ContainerRestart, type ContainerRestartStatus } from '../../src/controllers/container-restart/types.js';

const defaults = { graceSeconds: 30, minReadyMs: 1000, timeoutMs: 600_000 };

const cr = (over: Partial<ContainerRestart['spec']> = {}, status?: ContainerRestartStatus): ContainerRestart => ({
  metadata: { name: 'r1', namespace: 'shop', uid: 'uid-1', resourceVersion: '10', generation: 1 },
  spec: { podName: 'web', containers: [{ name: 'app', image: 'reg.local/app:v2' }, { name: 'side' }], ...over },
  status,
});

const op = (over: Partial<Operation> = {}): Operation => ({
  id: 'uid-1',
  podId: 'sb1',
  podName: 'shop/web',
  podIp: '10.0.0.5',
  state: 'Recreating',
  request: { pod: 'shop/web', containers: ['app', 'side'], images: { app: 'reg.local/app:v2' }, graceSeconds: 30, minReadyMs: 1000, timeoutMs: 1000 },
  containers: [
    { name: 'app', oldId: 'old-app', oldRuntimeName: '', oldImage: 'reg.local/app:v1', newImage: 'reg.local/app:v2', newAttempt: 1, newId: 'new-app', rollbackId: '', step: 'Done', steps: [], downtimeMs: 120 },
    { name: 'side', oldId: 'old-side', oldRuntimeName: '', oldImage: 'reg.local/side:1', newImage: 'reg.local/side:1', newAttempt: 1, newId: '', rollbackId: '', step: 'Waiting', steps: [] },
  ],
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:01.000Z',
  ...over,
});

describe('ContainerRestart: spec to engine request', () => {
  it('maps containers, images, grace, min-ready and the deadline; defaults fill the gaps', () => {
    const r = restartRequestFor(cr({ strategy: { gracePeriodSeconds: 5, minReadySeconds: 0, drainSeconds: 7, failurePolicy: 'Fail' }, activeDeadlineSeconds: 90 }), defaults);
    assert.deepEqual(r, { pod: 'shop/web', containers: ['app', 'side'], images: { app: 'reg.local/app:v2' }, graceSeconds: 5, minReadyMs: 0, timeoutMs: 90_000, drainMs: 7000, failurePolicy: 'Fail' });
    const d = restartRequestFor(cr(), defaults);
    assert.equal(d.graceSeconds, 30);
    assert.equal(d.minReadyMs, 1000);
    assert.equal(d.timeoutMs, 600_000);
  });

  it('refuses an unparsable image, naming it', () => {
    assert.throws(() => restartRequestFor(cr({ containers: [{ name: 'app', image: 'Bad:Ref:x' }] }), defaults), (e: unknown) => AgentError.is(e, 'InvalidArgument') && /container app/.test(e.message));
  });

  it('ordered false: the containers together within the one drain; ordered true (the default): one after another', () => {
    assert.equal(restartRequestFor(cr({ strategy: { ordered: false } }), defaults).together, true);
    assert.equal(restartRequestFor(cr({ strategy: { failurePolicy: 'Rollback', ordered: true } }), defaults).together, undefined);
    assert.equal(restartRequestFor(cr({}), defaults).together, undefined);
  });

  it('refuses failurePolicy Ignore (an object stored before the CRD dropped it), reason UnsupportedRequest', () => {
    assert.throws(
      () => restartRequestFor(cr({ strategy: { failurePolicy: 'Ignore' as never } }), defaults),
      (e: unknown) => AgentError.is(e, 'InvalidArgument') && e.reason === 'UnsupportedRequest' && /failurePolicy Ignore is not supported/.test(e.message),
    );
  });
});

describe('ContainerRestart: status from the operation', () => {
  const now = '2026-01-01T00:00:05.000Z';

  it('a running operation: phase Running, per-container steps, ids, images; condition Unknown', () => {
    const s = statusFromOperation(cr(), op(), 'node-a', now);
    assert.equal(s.phase, 'Running');
    assert.equal(s.operationId, 'uid-1');
    assert.equal(s.nodeName, 'node-a');
    assert.equal(s.summary, 'app:Done,side:Waiting');
    assert.deepEqual(s.containers?.[0], { name: 'app', state: 'Done', oldContainerID: 'old-app', newContainerID: 'new-app', oldImage: 'reg.local/app:v1', newImage: 'reg.local/app:v2', downtimeMilliseconds: 120 });
    assert.equal(s.completionTime, undefined);
    assert.equal(s.conditions?.[0].status, 'Unknown');
  });

  it('terminal states: Succeeded True; RolledBack and Cancelled are Failed with the operation\'s reason, in the condition, the status and per container', () => {
    const ok = statusFromOperation(cr(), op({ state: 'Succeeded', finishedAt: '2026-01-01T00:00:04.000Z' }), 'n', now);
    assert.equal(ok.phase, 'Succeeded');
    assert.equal(ok.completionTime, '2026-01-01T00:00:04.000Z');
    assert.equal(ok.conditions?.[0].status, 'True');
    assert.equal(ok.reason, undefined);
    const rb = statusFromOperation(cr(), op({ state: 'RolledBack', error: 'cancelled', reason: 'Cancelled' }), 'n', now);
    assert.equal(rb.phase, 'Failed');
    assert.deepEqual([rb.conditions?.[0].status, rb.conditions?.[0].reason, rb.reason, rb.message], ['False', 'Cancelled', 'Cancelled', 'cancelled']);
    const failed = statusFromOperation(cr(), op({ state: 'Failed', reason: 'ReplacementExitedDuringMinReady', containers: [{ ...op().containers[0], step: 'RolledBack', exitCode: 3, error: 'exited with 3', reason: 'ReplacementExitedDuringMinReady' }] }), 'n', now);
    assert.equal(failed.message, 'exited with 3');
    assert.equal(failed.containers?.[0].exitCode, 3);
    assert.deepEqual([failed.reason, failed.conditions?.[0].reason, failed.containers?.[0].reason], ['ReplacementExitedDuringMinReady', 'ReplacementExitedDuringMinReady', 'ReplacementExitedDuringMinReady']);
    const view = operationView({ ...cr(), status: failed });
    assert.deepEqual([view.reason, view.containers[0].reason], ['ReplacementExitedDuringMinReady', 'ReplacementExitedDuringMinReady'], 'the CLI reads the same reason back');
  });

  it('lastTransitionTime moves only when the condition status changes; equal statuses compare equal', () => {
    const first = statusFromOperation(cr(), op({ state: 'Pulling' }), 'n', '2026-01-01T00:00:01.000Z');
    const second = statusFromOperation(cr({}, first), op({ state: 'Recreating' }), 'n', '2026-01-01T00:00:02.000Z');
    assert.equal(second.conditions?.[0].lastTransitionTime, '2026-01-01T00:00:01.000Z');
    const done = statusFromOperation(cr({}, second), op({ state: 'Succeeded' }), 'n', '2026-01-01T00:00:03.000Z');
    assert.equal(done.conditions?.[0].lastTransitionTime, '2026-01-01T00:00:03.000Z');
    const again = statusFromOperation(cr({}, done), op({ state: 'Succeeded' }), 'n', '2026-01-01T00:00:09.000Z');
    assert.ok(sameStatus(done, again), 'a second computation of a finished operation writes nothing new');
    assert.ok(!sameStatus(first, second));
  });

  it('claimed and refused statuses carry the operation id, node and reason', () => {
    const c = claimedStatus(cr(), 'uid-1', 'node-a', 'agent-1', now);
    assert.deepEqual([c.phase, c.operationId, c.nodeName, c.agentId, c.startTime], ['Pending', 'uid-1', 'node-a', 'agent-1', now]);
    const r = refusedStatus(cr({}, c), 'container "x" not found', 'node-a', 'agent-2', now);
    assert.deepEqual([r.phase, r.operationId, r.agentId, r.completionTime, r.conditions?.[0].reason], ['Failed', 'uid-1', 'agent-1', now, 'Refused'], 'the agent that took it stays recorded');
    assert.equal(refusal({ ...cr(), status: r }), 'container "x" not found');
    const nf = refusedStatus(cr({}, c), 'container "x" not found', 'node-a', 'agent-2', now, 'ContainerNotFound');
    assert.deepEqual([nf.reason, nf.conditions?.[0].reason], ['ContainerNotFound', 'ContainerNotFound']);
    assert.equal(refusal({ ...cr(), status: nf }), 'container "x" not found', 'a refusal with its own reason is still a refusal');
    assert.equal(refusal({ ...cr(), status: c }), undefined);
  });
});

describe('ContainerRestart: status writes with conflicts', () => {
  /** A store answering replaceStatus like the API server: 409 unless the resourceVersion is current. */
  class FakeStore implements StatusApi {
    obj: ContainerRestart = cr();
    writes = 0;
    conflicts = 0;
    /** Bumps the stored object as another writer would. */
    touch(): void {
      this.obj = { ...this.obj, metadata: { ...this.obj.metadata, resourceVersion: String(Number(this.obj.metadata.resourceVersion) + 1), labels: { touched: 'yes' } } };
    }
    async get(): Promise<ContainerRestart> {
      return structuredClone(this.obj);
    }
    async replaceStatus(c: ContainerRestart, status: ContainerRestartStatus): Promise<ContainerRestart> {
      this.writes++;
      if (c.metadata.resourceVersion !== this.obj.metadata.resourceVersion) {
        this.conflicts++;
        throw new AgentError('Aborted', 'the object has been modified', { cause: { code: 409 } });
      }
      this.touch();
      this.obj = { ...this.obj, status };
      return structuredClone(this.obj);
    }
  }

  it('a 409 is answered by reading again and computing from the fresh object', async () => {
    const store = new FakeStore();
    const stale = await store.get();
    store.touch();
    const seen: string[] = [];
    const out = await writeStatus(store, stale, (cur) => {
      seen.push(cur.metadata.labels?.touched ?? 'stale');
      return claimedStatus(cur, 'uid-1', 'n', 'agent-1', 't');
    });
    assert.deepEqual(seen, ['stale', 'yes']);
    assert.equal(store.conflicts, 1);
    assert.equal(out.status?.operationId, 'uid-1');
    assert.equal(store.obj.metadata.labels?.touched, 'yes', 'the other writer\'s change is kept');
  });

  it('nothing is written when compute declines or the status is unchanged; endless conflicts end Aborted', async () => {
    const store = new FakeStore();
    await writeStatus(store, await store.get(), () => undefined);
    assert.equal(store.writes, 0);
    const once = await writeStatus(store, await store.get(), (cur) => claimedStatus(cur, 'uid-1', 'n', 'agent-1', 't'));
    await writeStatus(store, once, (cur) => claimedStatus(cur, 'uid-1', 'n', 'agent-1', 't'));
    assert.equal(store.writes, 1);
    const busy = new FakeStore();
    busy.get = async () => {
      busy.touch();
      return structuredClone({ ...busy.obj, metadata: { ...busy.obj.metadata, resourceVersion: '0' } });
    };
    busy.touch();
    await assert.rejects(writeStatus(busy, cr(), (cur) => claimedStatus(cur, 'uid-1', 'n', 'agent-1', 't')), (e: unknown) => AgentError.is(e, 'Aborted') && /conflicts in a row/.test(e.message));
    assert.equal(busy.conflicts, MAX_CONFLICTS);
  });
});

describe('inplacectl --kubeconfig: the object and its view', () => {
  it('builds the object from the command line, durations rounded up to seconds', () => {
    const o = containerRestartFor({ pod: 'shop/web', containers: ['app', 'side'], images: { app: 'reg/app:2' }, graceMs: 1500, minReadyMs: 0, timeoutMs: 60_000 }, 'default');
    assert.equal(o.metadata.namespace, 'shop');
    assert.equal(o.metadata.generateName, 'web-');
    assert.deepEqual(o.spec, { podName: 'web', containers: [{ name: 'app', image: 'reg/app:2' }, { name: 'side' }], strategy: { gracePeriodSeconds: 2, minReadySeconds: 0 }, activeDeadlineSeconds: 60 });
    const bare = containerRestartFor({ pod: 'web', containers: ['app'], images: {} }, 'ctx-ns');
    assert.equal(bare.metadata.namespace, 'ctx-ns');
    assert.deepEqual(bare.spec.strategy, {});
  });

  it('shows the status as the operation the RPC path prints', () => {
    const status = statusFromOperation(cr(), op({ state: 'Succeeded' }), 'n', 't');
    const v = operationView({ ...cr(), status });
    assert.deepEqual([v.id, v.podName, v.podIp, v.state], ['uid-1', 'shop/web', '10.0.0.5', 'Succeeded']);
    assert.deepEqual([v.containers[0].oldId, v.containers[0].newId, v.containers[0].step, v.containers[0].downtimeMs], ['old-app', 'new-app', 'Done', 120]);
    const pending = operationView(cr());
    assert.deepEqual([pending.state, pending.containers[1].step, pending.id], ['Pending', 'Waiting', 'uid-1']);
  });
});
