// The controller kit's pure parts (src/controllers/kit/), one copy for every controller: budgets, names with a
// digest, ownership (a controller ownerReference, nothing looser), and the status pace with a SidecarSet's
// progress fields.
import assert from 'node:assert/strict';
import { inPartition, resolveMaxUnavailable } from '../../src/controllers/kit/budget.js';
import { digestName, MAX_NAME } from '../../src/controllers/kit/names.js';
import { controlledBy, notOwned, ownerKind, restartMismatch } from '../../src/controllers/kit/ownership.js';
import { STATUS_PACE_MS, statusWrite } from '../../src/controllers/kit/status-pace.js';
import { SIDECAR_PROGRESS } from '../../src/controllers/sidecarset/round.js';
import type { SidecarSetStatus } from '../../src/controllers/sidecarset/types.js';

describe('controller kit', () => {
  it('maxUnavailable: an integer, an integer written as a string, or a percent rounded down; at least 1', () => {
    assert.deepEqual([resolveMaxUnavailable(undefined, 10), resolveMaxUnavailable(3, 10), resolveMaxUnavailable('3', 10), resolveMaxUnavailable('25%', 10), resolveMaxUnavailable('1%', 10), resolveMaxUnavailable(0, 10)], [1, 3, 3, 2, 1, 1]);
  });

  it('partition keeps the last pods of the update order', () => {
    assert.deepEqual(inPartition(['a', 'b', 'c'], 2), ['a']);
    assert.deepEqual(inPartition(['a', 'b', 'c'], undefined), ['a', 'b', 'c']);
    assert.deepEqual(inPartition(['a', 'b'], 5), []);
  });

  it('a name with a digest: inputs that read the same differ, a long one is cut to fit ending in a letter or digit', () => {
    assert.notEqual(digestName('a-b-c-0', ['a', 'b-c-0']), digestName('a-b-c-0', ['a-b', 'c-0']));
    const long = digestName(`${'x'.repeat(250)}-.`, ['x'], '-r7');
    assert.ok(long.length <= MAX_NAME);
    assert.match(long, /^x+-[0-9a-f]{10}-r7$/);
  });

  it('ownership is the controller ownerReference of the owner kind and uid; a reference without controller: true is not', () => {
    const kind = ownerKind('example.io', 'v1', 'Thing');
    const owner = { metadata: { name: 't', uid: 'u1' } };
    const obj = { metadata: { ownerReferences: [kind.ref(owner)] } };
    assert.deepEqual(kind.ref(owner), { apiVersion: 'example.io/v1', kind: 'Thing', name: 't', uid: 'u1', controller: true });
    assert.ok(kind.owns('u1', obj) && controlledBy('u1', obj));
    const loose = { metadata: { ownerReferences: [{ apiVersion: 'example.io/v1', kind: 'Thing', name: 't', uid: 'u1' }] } };
    assert.equal(kind.owns('u1', loose), false);
    assert.equal(controlledBy('u1', loose), false, 'a workload reference without controller: true is not its controller');
    assert.equal(ownerKind('other.io', 'v1', 'Thing').owns('u1', obj), false);
    assert.equal(notOwned(kind, owner, obj), undefined);
    assert.equal(notOwned(kind, owner, loose), 'it has no controller ownerReference to Thing t (uid u1)');
    const wanted = { ...obj, spec: { podName: 'p', containers: [{ name: 'c', image: 'i:2' }] } };
    assert.equal(restartMismatch(kind, owner, 'this thing', wanted, wanted), undefined);
    assert.equal(restartMismatch(kind, owner, 'this thing', { ...wanted, spec: { ...wanted.spec, podName: 'q' } }, wanted), 'it asks for another pod or other images than this thing would');
  });

  it("a SidecarSet's counts wait for the pace; a reason or a failure is written at once", () => {
    const at = (updated: number, reason: string): SidecarSetStatus => ({ observedGeneration: 2, updatedPods: updated, podsInFlight: [`ns/web-${updated}`], message: `${updated} updated`, conditions: [{ type: 'Updated', status: 'False', reason, message: `${updated} updated`, lastTransitionTime: 't' }] });
    const t = 10_000;
    assert.equal(statusWrite(at(1, 'Updating'), at(1, 'Updating'), t, t + 1, SIDECAR_PROGRESS), 'same');
    assert.equal(statusWrite(at(1, 'Updating'), at(2, 'Updating'), t, t + 1, SIDECAR_PROGRESS), t + STATUS_PACE_MS);
    assert.equal(statusWrite(at(1, 'Updating'), at(2, 'NameTaken'), t, t + 1, SIDECAR_PROGRESS), 'now');
    assert.equal(statusWrite(at(1, 'Updating'), { ...at(1, 'Updating'), failures: [{ pod: 'ns/web-1', reason: 'NameTaken: x' }] }, t, t + 1, SIDECAR_PROGRESS), 'now');
  });
});
