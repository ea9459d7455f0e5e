// bench:rollout's write accounting: apiserver_request_total's write verbs by resource, subresource and verb, and
// the idle cluster's background taken off in proportion to the measured window.
import assert from 'node:assert/strict';
import { netOfIdle, perPod, stored, writeCounts, writesBetween } from '../../bench/apiserver-writes.js';

const metrics = (podsPatch: number, leasesPut: number) => [
  '# HELP apiserver_request_total Counter of apiserver requests',
  `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} ${podsPatch}`,
  `apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 1`,
  `apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} ${leasesPut}`,
  'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 500',
  'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="POST",version=""} 2',
].join('\n');

describe('bench: API server write accounting', () => {
  it('sums the write verbs by resource/subresource and verb, every code together, and leaves reads out', () => {
    assert.deepEqual(writeCounts(metrics(10, 100)), { 'pods/status PATCH': 11, 'leases PUT': 100, '(none) POST': 2 });
  });

  it('takes off the idle window scaled to the measured one, never below zero', () => {
    const idle = writesBetween({ at: 0, counts: writeCounts(metrics(10, 100)) }, { at: 10_000, counts: writeCounts(metrics(10, 110)) });
    assert.deepEqual(idle, { total: 10, byKey: { 'leases PUT': 10 } });
    const run = writesBetween({ at: 10_000, counts: writeCounts(metrics(10, 110)) }, { at: 30_000, counts: writeCounts(metrics(22, 125)) });
    assert.deepEqual(run, { total: 27, byKey: { 'pods/status PATCH': 12, 'leases PUT': 15 } });
    // 20 s measured against a 10 s idle window: twice the idle's 10 lease writes, capped at the 15 made.
    const net = netOfIdle(run, 20_000, idle, 10_000);
    assert.deepEqual(net, { total: 12, byKey: { 'pods/status PATCH': 12 }, background: 15 });
    assert.equal(perPod(net, 6), 'pods/status PATCH 2.0');
  });

  it('tells stored writes from reviews and token requests, which store nothing', () => {
    const w = { total: 9, byKey: { 'subjectaccessreviews POST': 4, 'serviceaccounts/token POST': 1, 'serviceaccounts POST': 1, 'pods/status PATCH': 3 } };
    assert.deepEqual(stored(w), { total: 4, byKey: { 'serviceaccounts POST': 1, 'pods/status PATCH': 3 } });
  });
});
