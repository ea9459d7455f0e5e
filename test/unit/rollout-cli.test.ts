import assert from 'node:assert/strict';
import { renderRolloutStatus, watchEnd } from '../../src/cli/rollout-command.js';
import type { InPlaceRollout } from '../../src/rollout/types.js';

const r = (status: InPlaceRollout['status'], generation = 1): InPlaceRollout => ({
  metadata: { name: 'roll', namespace: 'shop', generation },
  spec: { targetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web' } },
  status,
});

describe('inplacectl rollout status', () => {
  it('prints phase, revisions, counts, pods in flight and failures with exit codes', () => {
    const text = renderRolloutStatus(
      r({ observedGeneration: 1, phase: 'Failed', currentRevision: 'web-a', updateRevision: 'web-b', replicas: 6, updatedReplicas: 2, readyReplicas: 6, podsInFlight: ['web-3'], failures: [{ pod: 'web-3', container: 'app', reason: 'RolledBack: exited', exitCode: 3 }], coordinator: 'n1' }),
    );
    assert.match(text, /^shop\/roll: Failed/);
    assert.match(text, /web-a -> web-b/);
    assert.match(text, /2\/6 updated, 6 ready/);
    assert.match(text, /in flight\s+web-3/);
    assert.match(text, /pod web-3 container app: RolledBack: exited \(exit code 3\)/);
  });

  it('--watch ends on Succeeded (0), Failed or a failure pause (1), never on a status of an older spec', () => {
    assert.equal(watchEnd(r({ observedGeneration: 1, phase: 'Succeeded' })), 0);
    assert.equal(watchEnd(r({ observedGeneration: 1, phase: 'Failed' })), 1);
    assert.equal(watchEnd(r({ observedGeneration: 1, phase: 'Paused', failures: [{ pod: 'p', reason: 'x' }] })), 1);
    assert.equal(watchEnd(r({ observedGeneration: 1, phase: 'Paused' })), undefined);
    assert.equal(watchEnd(r({ observedGeneration: 1, phase: 'Succeeded' }, 2)), undefined);
  });
});
