import { strict as assert } from 'node:assert';
import { STATUS_PACE_MS, statusWrite as kitStatusWrite } from '../../src/controllers/kit/status-pace.js';
import { ROLLOUT_PROGRESS } from '../../src/controllers/rollout/reconcile.js';
import type { InPlaceRolloutStatus } from '../../src/controllers/rollout/types.js';

const progressing = (updated: number, inFlight: string[]): InPlaceRolloutStatus => ({
  observedGeneration: 2,
  phase: 'Progressing',
  updateRevision: 'b',
  currentRevision: 'a',
  replicas: 6,
  updatedReplicas: updated,
  readyReplicas: 5,
  podsInFlight: inFlight,
  message: `${updated} of 6 updated`,
  conditions: [{ type: 'Progressing', status: 'True', reason: 'Updating', message: `${updated} of 6 updated`, lastTransitionTime: '2026-12-03T00:00:00Z' }],
});

/** The kit's pace with the rollout's progress fields, as reconcile.ts asks it. */
const statusWrite = (a: InPlaceRolloutStatus, b: InPlaceRolloutStatus, last: number | undefined, now: number) => kitStatusWrite(a, b, last, now, ROLLOUT_PROGRESS);

describe('rollout status: written on change, progress paced', () => {
  it('the stored status is not written again', () => {
    assert.equal(statusWrite(progressing(1, ['web-4']), progressing(1, ['web-4']), 1000, 1001), 'same');
  });

  it('progress alone waits out the pace after the last write, then is written', () => {
    const t = 10_000;
    assert.equal(statusWrite(progressing(1, ['web-4']), progressing(2, ['web-3']), t, t + 10), t + STATUS_PACE_MS);
    assert.equal(statusWrite(progressing(1, ['web-4']), progressing(2, ['web-3']), t, t + STATUS_PACE_MS), 'now');
    // No write known (a new coordinator): written at once.
    assert.equal(statusWrite(progressing(1, ['web-4']), progressing(2, ['web-3']), undefined, t), 'now');
  });

  it('a change of phase, condition status, failures or revision is written at once', () => {
    const t = 10_000;
    const prev = progressing(5, ['web-0']);
    const done: InPlaceRolloutStatus = { ...progressing(6, []), phase: 'Succeeded', currentRevision: 'b', conditions: [{ type: 'Progressing', status: 'False', reason: 'Complete', lastTransitionTime: '2026-12-03T00:00:09Z' }] };
    assert.equal(statusWrite(prev, done, t, t + 1), 'now');
    assert.equal(statusWrite(prev, { ...prev, failures: [{ pod: 'web-0', reason: 'crashed' }] }, t, t + 1), 'now');
    assert.equal(statusWrite(prev, { ...prev, observedGeneration: 3 }, t, t + 1), 'now');
  });
});
