// The previous template of a Deployment updated in place, kept for kubectl rollout undo
// (src/controllers/rollout/workloads/history.ts): the history ReplicaSet as created, and as patched for the next change.
import assert from 'node:assert/strict';
import type { V1ReplicaSet } from '@kubernetes/client-node';
import { HISTORY_HASH, historyName, historyPatch, historyReplicaSet, RS_REVISION_ANNOTATION } from '../../src/controllers/rollout/workloads/history.js';

const rs = (image: string, revision: string, cause?: string): V1ReplicaSet => ({
  metadata: { name: 'web-7d9f', uid: 'rs1', annotations: { [RS_REVISION_ANNOTATION]: revision, ...(cause ? { 'kubernetes.io/change-cause': cause } : {}) } },
  spec: { replicas: 6, selector: { matchLabels: { app: 'web', 'pod-template-hash': '7d9f' } }, template: { metadata: { labels: { app: 'web', 'pod-template-hash': '7d9f' } }, spec: { containers: [{ name: 'app', image }] } } },
});

describe('the history ReplicaSet of a Deployment updated in place (history.ts)', () => {
  it("holds the pods' ReplicaSet's template and revision, 0 replicas, owned by the Deployment, its own hash", () => {
    const h = historyReplicaSet({ name: 'web', uid: 'd1', selector: { app: 'web' } }, rs('app:v1', '1', 'first'));
    assert.equal(h.metadata?.name, historyName('web'));
    assert.equal(h.spec?.replicas, 0);
    assert.deepEqual(h.spec?.selector.matchLabels, { app: 'web', 'pod-template-hash': HISTORY_HASH });
    assert.deepEqual(h.spec?.template?.metadata?.labels, { app: 'web', 'pod-template-hash': HISTORY_HASH }, 'its template matches its own selector, not the pods');
    assert.equal(h.spec?.template?.spec?.containers[0].image, 'app:v1');
    assert.deepEqual(h.metadata?.annotations, { [RS_REVISION_ANNOTATION]: '1', 'kubernetes.io/change-cause': 'first' });
    assert.deepEqual(h.metadata?.ownerReferences?.map((o) => [o.kind, o.uid, o.controller]), [['Deployment', 'd1', true]], 'kubectl lists only the ReplicaSets the Deployment controls');
    assert.match(historyName('web'), /[aeiou]/, 'never a name the Deployment controller makes');
  });

  it('the next change: the patch replaces the template and revision, drops a change cause the new one has not, and tests the object first', () => {
    const existing = { ...historyReplicaSet({ name: 'web', uid: 'd1', selector: { app: 'web' } }, rs('app:v1', '1', 'first')), metadata: { name: 'web-inplace-previous', uid: 'h1', resourceVersion: '9', annotations: { [RS_REVISION_ANNOTATION]: '1', 'kubernetes.io/change-cause': 'first' } } };
    const ops = historyPatch(existing, rs('app:v2', '2'));
    assert.deepEqual(ops.slice(0, 2), [{ op: 'test', path: '/metadata/uid', value: 'h1' }, { op: 'test', path: '/metadata/resourceVersion', value: '9' }]);
    const tmpl = ops.find((o) => o.path === '/spec/template')?.value as V1ReplicaSet['spec'] & object;
    assert.equal((tmpl as never as { spec: { containers: { image: string }[] } }).spec.containers[0].image, 'app:v2');
    assert.deepEqual(ops.find((o) => o.path.endsWith('revision')), { op: 'add', path: '/metadata/annotations/deployment.kubernetes.io~1revision', value: '2' });
    assert.deepEqual(ops.at(-1), { op: 'remove', path: '/metadata/annotations/kubernetes.io~1change-cause' });
  });
});
