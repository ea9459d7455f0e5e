// The one lastTransitionTime rule every computed status uses (src/k8s/conditions.ts).
import assert from 'node:assert/strict';
import { keepTransition } from '../../src/k8s/conditions.js';

describe('conditions: lastTransitionTime', () => {
  const prev = [
    { type: 'Succeeded', status: 'False', reason: 'Running', lastTransitionTime: '2026-12-02T10:00:00Z' },
    { type: 'Other', status: 'True', lastTransitionTime: '2026-12-02T09:00:00Z' },
  ];
  it('keeps the previous time while the status stays, whatever else changes', () => {
    assert.deepEqual(keepTransition(prev, { type: 'Succeeded', status: 'False', reason: 'Pulling' }, 'NOW'), { type: 'Succeeded', status: 'False', reason: 'Pulling', lastTransitionTime: '2026-12-02T10:00:00Z' });
  });
  it('moves to now when the status changes, or the condition is new', () => {
    assert.equal(keepTransition(prev, { type: 'Succeeded', status: 'True', reason: 'Done' }, 'NOW').lastTransitionTime, 'NOW');
    assert.equal(keepTransition(prev, { type: 'Fresh', status: 'True' }, 'NOW').lastTransitionTime, 'NOW');
    assert.equal(keepTransition(undefined, { type: 'Other', status: 'True' }, 'NOW').lastTransitionTime, 'NOW');
  });
});

describe('sameJson: the one "did it change?" before a write', () => {
  it('ignores key order and absent-versus-null, and tells any other difference', async () => {
    const { sameJson } = await import('../../src/same-json.js');
    assert.equal(sameJson({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1, d: null, e: undefined }), true);
    assert.equal(sameJson({ a: [1, 2] }, { a: [2, 1] }), false);
    assert.equal(sameJson({ a: '1' }, { a: 1 }), false);
  });
});
