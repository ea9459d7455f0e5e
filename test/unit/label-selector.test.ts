// The label selector of list and watch requests (k8s/label-selector.ts).
import assert from 'node:assert/strict';
import { selectorFor } from '../../src/k8s/label-selector.js';

describe('label selector', () => {
  it('joins every pair as k=v, in the order given; no labels select everything', () => {
    assert.equal(selectorFor({ app: 'web', 'inplace-agent.io/rollout': 'r1' }), 'app=web,inplace-agent.io/rollout=r1');
    assert.equal(selectorFor({}), '');
  });
});
