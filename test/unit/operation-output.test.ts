// What a client is shown about an operation: only values that were set or apply, the reason as a field, the
// pod compared after success, and one named duration. Operations go through the real wire encoding.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { operationFromWire, operationToWire, type OperationView } from '../../src/api/convert.js';
import { fromServiceError, toServiceError } from '../../src/api/status.js';
import { podCheck, renderOperation, restartSummary } from '../../src/cli/render.js';
import { ProgressPrinter } from '../../src/cli/progress.js';
import type { Operation } from '../../src/engine/operation.js';
import { Reasons, RefusalReasons } from '../../src/engine/reasons.js';
import { AgentError } from '../../src/errors.js';
import { loadProto } from '../../src/proto.js';
import type { Operation__Output } from '../../src/gen/inplace/v1/Operation.js';

/** The operation as a client receives it: encoded and decoded by the API's own GetOperation method. */
function overTheWire(op: Operation): OperationView {
  const method = (loadProto('inplace/v1/agent.proto')['inplace.v1.Agent'] as grpc.ServiceDefinition).GetOperation;
  return operationFromWire(method.responseDeserialize(method.responseSerialize(operationToWire(op))) as Operation__Output);
}

function op(patch: Partial<Operation> = {}): Operation {
  return {
    id: '76d1f0aa-0000-4000-8000-000000000001',
    podId: 'a'.repeat(64),
    podName: 'shop/web',
    podIp: '10.88.0.7',
    state: 'Pending',
    request: { pod: 'shop/web', containers: ['app'], images: {}, graceSeconds: 30, minReadyMs: 1000, timeoutMs: 600_000 },
    containers: [
      {
        name: 'app',
        oldId: 'b'.repeat(64),
        oldRuntimeName: '',
        oldImage: 'app:v1',
        newImage: 'app:v2',
        newAttempt: 3,
        newId: '',
        rollbackId: '',
        step: 'Waiting',
        steps: [{ step: 'Waiting', at: '2026-01-01T00:00:00.000Z' }],
      },
    ],
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    ...patch,
  };
}

describe('operation output', () => {
  it('shows what was requested and what applies, and invents nothing that was not set', () => {
    const v = overTheWire(op({ requested: { graceSeconds: 30 } }));
    assert.deepEqual(v.requested, { graceSeconds: 30 });
    assert.deepEqual(v.applied, { graceSeconds: 30, minReadyMs: 1000, timeoutMs: 600_000 });
    const json = JSON.parse(JSON.stringify(v)) as Record<string, unknown> & { containers: Record<string, unknown>[] };
    assert.equal(json.request, undefined, 'no half-filled request with zeros');
    for (const key of ['newAttempt', 'newId', 'rollbackId', 'exitCode', 'downtimeMs', 'error', 'reason', 'oldRuntimeName']) {
      assert.ok(!(key in json.containers[0]), `container ${key} is left out while it does not apply`);
    }
    for (const key of ['finishedAt', 'error', 'errorKind', 'reason', 'podAfter']) assert.ok(!(key in json), `${key} is left out while it does not apply`);
    assert.deepEqual(overTheWire(op({ requested: { minReadyMs: 0, timeoutMs: 5000 } })).requested, { minReadyMs: 0, timeoutMs: 5000 }, 'a requested 0 is kept');
  });

  it('carries the reason of a failure as a field, on the operation and the container', () => {
    const failed = op({ state: 'Failed', reason: Reasons.ExitedEarly, error: 'replacement exited', finishedAt: '2026-01-01T00:00:02.000Z' });
    failed.containers[0] = { ...failed.containers[0], step: 'RolledBack', reason: Reasons.ExitedEarly, exitCode: 3, error: 'exited' };
    const v = overTheWire(failed);
    assert.equal(v.reason, 'ReplacementExitedDuringMinReady');
    assert.equal(v.containers[0].reason, 'ReplacementExitedDuringMinReady');
    assert.equal(v.containers[0].exitCode, 3);
    assert.match(restartSummary(v), /Failed \[ReplacementExitedDuringMinReady\]/);
  });

  it('carries the reason of a refusal through the gRPC status', () => {
    const back = fromServiceError(toServiceError(new AgentError('NotFound', 'pod "x" not found', { reason: RefusalReasons.PodNotFound })), 'unix:///a.sock');
    assert.equal(back.reason, 'PodNotFound');
    assert.equal(back.kind, 'NotFound');
  });

  it('prints what was compared about the pod after a restart, and says when it changed', () => {
    const done = (podAfter: Operation['podAfter'], podIp = '10.88.0.7') =>
      overTheWire(op({ state: 'Succeeded', podIp, podAfter, finishedAt: '2026-01-01T00:00:01.500Z' }));
    assert.match(podCheck(done({ podId: 'a'.repeat(64), podIp: '10.88.0.7' })), /sandbox aaaaaaaaaaaa unchanged, IP 10\.88\.0\.7 unchanged/);
    assert.match(podCheck(done({ podId: 'c'.repeat(64), podIp: '172.17.0.9' }, '172.17.0.3')), /sandbox CHANGED aaaaaaaaaaaa -> cccccccccccc, IP CHANGED 172\.17\.0\.3 -> 172\.17\.0\.9/);
    const noIp = podCheck(done({ podId: 'a'.repeat(64), podIp: '' }, ''));
    assert.match(noIp, /no IP before or after/);
    assert.doesNotMatch(noIp, /- unchanged/);
    assert.match(podCheck(done(undefined)), /not read again/);
  });

  it('prints one duration for a restart, names what it covers, and shows the downtime beside it', () => {
    const v = op({ state: 'Succeeded', podAfter: { podId: 'a'.repeat(64), podIp: '10.88.0.7' }, finishedAt: '2026-01-01T00:00:01.500Z' });
    v.containers[0] = { ...v.containers[0], step: 'Done', newId: 'd'.repeat(64), downtimeMs: 85 };
    const text = restartSummary(overTheWire(v));
    assert.match(text, /^restarted in place in 1\.5s \(submit to verified, of which 1\.0s the min-ready wait\): app bbbbbbbbbbbb -> dddddddddddd \(app:v2, down 85ms\)/);
    assert.equal(text.match(/\d+(\.\d+)?s\b/g)?.length, 2, 'one duration and the min-ready share, nothing else');
  });

  it('times progress and a finished operation from the operation itself, not from when the client looked', () => {
    const before = overTheWire(op({ state: 'Recreating', updatedAt: '2026-01-01T00:00:00.400Z' }));
    const after = overTheWire(op({ state: 'Succeeded', updatedAt: '2026-01-01T00:00:01.200Z', finishedAt: '2026-01-01T00:00:01.200Z' }));
    const printer = new ProgressPrinter();
    printer.next(before);
    assert.match(printer.next(after).join('\n'), /^\s*1\.2s {2}succeeded/);
    assert.match(renderOperation(after), /finished: 2026-01-01T00:00:01\.200Z \(1\.2s\)/);
  });
});
