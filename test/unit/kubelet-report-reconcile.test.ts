import assert from 'node:assert/strict';
import type { V1Pod } from '../../src/k8s/client.js';
import type { Operation } from '../../src/engine/operation.js';
import type { ReportDeps } from '../../src/kube/kubelet/report.js';
import { RestartReport } from '../../src/kube/kubelet/report.js';
import { ConditionReasons, READY_CONDITION } from '../../src/kube/ready-condition.js';
import { memoryLogger } from '../support/memory-logger.js';

const ENDED = '2026-12-01T19:10:00.500Z';
/** An ended operation on ns/web-1 that drained its container. */
const op = (): Operation =>
  ({
    id: 'old',
    podName: 'ns/web-1',
    state: 'Succeeded',
    createdAt: '2026-12-01T19:09:55.000Z',
    finishedAt: ENDED,
    containers: [{ name: 'app', strategy: 'kubelet', step: 'Done', oldImage: 'a:1', newImage: 'a:2', steps: [{ step: 'Draining', at: '2026-12-01T19:09:56.000Z' }] }],
  }) as unknown as Operation;
/** The pod web-1 with the condition False (Draining) since `since`. */
const pod = (since: string): V1Pod => ({
  metadata: { name: 'web-1', namespace: 'ns', uid: 'u' },
  status: { conditions: [{ type: READY_CONDITION, status: 'False', reason: ConditionReasons.Draining, lastTransitionTime: since as unknown as Date }] },
});

function report(p: V1Pod) {
  const written: string[] = [];
  const d = {
    api: { readPod: async () => p },
    conditions: { set: async (_ns: string, _n: string, c: { status: string }) => (written.push(c.status), p) },
    events: { record: async () => undefined },
    log: memoryLogger().logger,
  } as unknown as ReportDeps;
  return { r: new RestartReport(d), written };
}

describe('kubelet strategy: the outcome written again at start-up (RestartReport.reconcile)', () => {
  it('writes the outcome of an ended operation whose condition was left False by its own drain', async () => {
    const { r, written } = report(pod('2026-12-01T19:09:56Z'));
    await r.reconcile([op()]);
    assert.deepEqual(written, ['True']);
  });

  it('never over a later drain: a False set after the operation ended (a later pod of the same name), or an operation under way now', async () => {
    const later = report(pod('2026-12-01T19:18:34Z'));
    await later.r.reconcile([op()]);
    assert.deepEqual(later.written, [], 'the False is a later operation’s');
    const busy = report(pod('2026-12-01T19:09:56Z'));
    await busy.r.reconcile([op()], (name) => name === 'ns/web-1');
    assert.deepEqual(busy.written, [], 'an operation on the pod is under way');
  });
});
