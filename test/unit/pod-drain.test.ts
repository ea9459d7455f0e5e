import assert from 'node:assert/strict';
import type { ContainerTarget, Operation } from '../../src/engine/operation.js';
import { lastOfPod, podDrainer, podTargets, SHARED_NOTE, sharedDrainNote } from '../../src/kube/drain/pod-drain.js';

const target = (name: string, steps: { step: string; detail?: string }[], strategy: 'kubelet' | 'standalone' = 'kubelet'): ContainerTarget => ({
  name, strategy, oldId: `old-${name}`, oldRuntimeName: '', oldImage: 'i:1', newImage: 'i:1', newAttempt: 1, newId: '', rollbackId: '',
  step: steps.at(-1)?.step ?? 'Waiting', steps: steps.map((s) => ({ ...s, at: '2026-12-05T00:00:00Z' })),
});
const op = (containers: ContainerTarget[]) => ({ id: 'op', containers }) as unknown as Operation;

describe('kube: one drain a pod (pod-drain.ts)', () => {
  it("the containers of the strategy in order; the gate opens after the last planned, touched or not", () => {
    const a = target('app', [{ step: 'Waiting' }]);
    const s = target('sidecar', [{ step: 'Waiting' }]);
    const other = target('loose', [{ step: 'Waiting' }], 'standalone');
    const o = op([a, s, other]);
    assert.deepEqual(podTargets(o, 'kubelet'), [a, s]);
    assert.equal(lastOfPod(o, a, 'kubelet'), false, 'the first of two is not the last, even while it is the only one touched');
    assert.equal(lastOfPod(o, s, 'kubelet'), true);
  });

  it('the drainer is the container whose Draining step records a drain, never a share of one, nor one under way', () => {
    const a = target('app', [{ step: 'Waiting' }, { step: 'Draining' }]);
    const s = target('sidecar', [{ step: 'Waiting' }]);
    const o = op([a, s]);
    assert.equal(podDrainer(o, 'kubelet'), undefined, 'a drain under way (no detail yet) is not on record: resumed, it is drained again');
    a.steps[1].detail = 'EndpointSlices web-x let the address go: 38 ms';
    assert.equal(podDrainer(o, 'kubelet'), a);
    assert.equal(podDrainer(o, 'kubelet', a), undefined, 'a container never shares its own drain');
    s.steps.push({ step: 'Draining', at: '', detail: sharedDrainNote(a) });
    assert.ok(sharedDrainNote(a).startsWith(SHARED_NOTE));
    assert.equal(podDrainer(o, 'kubelet', a), undefined, 'a share is not a drain');
    assert.equal(podDrainer(o, 'kubelet', s), a);
  });
});
