import assert from 'node:assert/strict';
import type { CoreV1Event, V1EndpointSlice, V1Pod } from '@kubernetes/client-node';
import type { ContainerTarget, Operation } from '../../src/engine/operation.js';
import type { KubeApi } from '../../src/k8s/kube-api.js';
import { DataPlane, type ProxyReader } from '../../src/kube/drain/data-plane.js';
import { Drainer } from '../../src/kube/drain/drainer.js';
import { readyOthers, servicesListing, slicesHolding } from '../../src/kube/drain/endpoints.js';
import { appliedAll, lastSyncOf, parseConfigz, parseSyncMetrics, type ProxySyncSample } from '../../src/kube/drain/kube-proxy-metrics.js';
import { polledSlices } from '../../src/kube/drain/slice-feed.js';
import { noteUndrained, type WayBackDeps } from '../../src/kube/drain/way-back.js';
import { PodEvents } from '../../src/kube/pod-events.js';
import { silentLogger } from '../../src/log.js';
import { ManualClock } from '../support/manual-timers.js';

const A = { ip: '10.0.0.5', podUid: 'u5' };

/** A slice of Service svc with the given endpoints (ip, ready). */
const slice = (name: string, svc: string, eps: [string, boolean][]): V1EndpointSlice => ({
  metadata: { name, labels: { 'kubernetes.io/service-name': svc } },
  addressType: 'IPv4',
  endpoints: eps.map(([ip, ready]) => ({ addresses: [ip], conditions: { ready } })),
});

/** Serves a scripted sequence of slice lists, one per list call (the last repeats). */
function scriptedApi(script: V1EndpointSlice[][]): KubeApi & { lists: number } {
  const api = {
    lists: 0,
    listEndpointSlices: () => Promise.resolve(script[Math.min(api.lists++, script.length - 1)]),
  };
  return api as unknown as KubeApi & { lists: number };
}

/** kube-proxy as a function of the clock: it receives changes at `queued` and syncs at `syncs` (epoch ms). */
class FakeProxy implements ProxyReader {
  url = 'http://127.0.0.1:10249';
  down = false;
  constructor(
    private readonly clock: ManualClock,
    private readonly queued: number[],
    private readonly syncs: number[],
    private readonly minSyncMs = 1000,
  ) {}
  sample(): Promise<ProxySyncSample> {
    if (this.down) return Promise.reject(new Error(`${this.url}/metrics: ECONNREFUSED`));
    const now = this.clock.now();
    const last = Math.max(0, ...this.syncs.filter((t) => t <= now));
    const queued = this.queued.filter((t) => t <= now);
    return Promise.resolve({ lastSyncMs: { IPv4: last }, lastQueuedMs: { IPv4: Math.max(0, ...queued) }, pending: queued.filter((t) => t > last).length });
  }
  config() {
    if (this.down) return Promise.reject(new Error(`${this.url}/configz: ECONNREFUSED`));
    return Promise.resolve({ mode: 'iptables', minSyncMs: this.minSyncMs });
  }
}

describe('drain: what the EndpointSlices say', () => {
  it('counts only slices where the address is a ready endpoint, by IP or by Pod UID', () => {
    const s = [slice('a', 'web', [['10.0.0.5', true]]), slice('b', 'web', [['10.0.0.5', false]]), slice('c', 'api', [['10.0.0.6', true]])];
    assert.deepEqual(slicesHolding(s, A), ['a']);
    const byUid: V1EndpointSlice = { metadata: { name: 'd' }, addressType: 'IPv4', endpoints: [{ addresses: ['10.9.9.9'], targetRef: { kind: 'Pod', uid: 'u5' } }] };
    assert.deepEqual(slicesHolding([byUid], A), ['d'], 'no conditions: ready, as the API says');
  });

  it('counts the other ready endpoints of each Service that lists the address', () => {
    const s = [slice('a', 'web', [['10.0.0.5', true], ['10.0.0.7', false]]), slice('b', 'web', [['10.0.0.8', true]]), slice('c', 'solo', [['10.0.0.5', true]])];
    assert.deepEqual(servicesListing(s, A).sort(), ['solo', 'web']);
    assert.deepEqual([...readyOthers(s, ['web', 'solo'], A)], [['web', 1], ['solo', 0]]);
  });
});

describe('drain: kube-proxy metrics', () => {
  it('reads the last sync per IP family and pending changes from the exposition', () => {
    const text = [
      '# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds [ALPHA] The last time proxy rules were successfully synced',
      '# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge',
      'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1.7646e+09',
      'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"} 1.7645e+09',
      'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family="IPv4"} 1.76459e+09',
      'kubeproxy_sync_proxy_rules_endpoint_changes_pending 2',
    ].join('\n');
    const sample = parseSyncMetrics(text);
    assert.deepEqual(sample, { lastSyncMs: { IPv4: 1.7646e12, IPv6: 1.7645e12 }, lastQueuedMs: { IPv4: 1.76459e12 }, pending: 2 });
    assert.equal(appliedAll(sample, 'IPv4'), false, 'changes pending');
    assert.equal(appliedAll({ ...sample, pending: 0 }, 'IPv4'), true);
    assert.equal(appliedAll({ ...sample, pending: 0, lastQueuedMs: { IPv4: 1.7647e12 } }, 'IPv4'), false, 'a change queued after the last sync');
    assert.equal(lastSyncOf(sample, 'IPv4'), 1.7646e12, 'a family is judged by its own sync (the other syncs only when it changes)');
    assert.equal(lastSyncOf({ lastSyncMs: { '': 5 }, lastQueuedMs: {}, pending: 0 }, 'IPv6'), 5);
    assert.throws(() => parseSyncMetrics('up 1\n'), /no kubeproxy_sync_proxy_rules_last_timestamp_seconds/);
  });

  it('reads minSyncPeriod from /configz, top-level or under the mode', () => {
    assert.deepEqual(parseConfigz({ 'kubeproxy.config.k8s.io': { mode: 'iptables', iptables: { minSyncPeriod: '1s' } } }), { mode: 'iptables', minSyncMs: 1000 });
    assert.deepEqual(parseConfigz({ 'kubeproxy.config.k8s.io': { mode: 'nftables', minSyncPeriod: '1m0s' } }), { mode: 'nftables', minSyncMs: 60_000 });
    assert.deepEqual(parseConfigz({ 'kubeproxy.config.k8s.io': { mode: 'ipvs', ipvs: { minSyncPeriod: '500ms' } } }), { mode: 'ipvs', minSyncMs: 500 });
    assert.throws(() => parseConfigz({ 'kubeproxy.config.k8s.io': { mode: 'iptables' } }), /no minSyncPeriod/);
  });
});

describe('drain: waiting for the data plane', () => {
  const since = (clock: ManualClock, t: number) => clock.now() - t;

  it('ends once kube-proxy applied the change it received after it was seen, and minSyncPeriod passed', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const seen = clock.now();
    // Received 20 ms after the agent saw it; applied 1.3 s after (the previous sync held it back).
    const dp = new DataPlane(new FakeProxy(clock, [seen + 20], [seen - 300, seen + 1300]), 2000, clock, silentLogger());
    const w = await dp.wait(seen, seen + 5000);
    assert.equal(w.way, 'kube-proxy');
    assert.equal(w.done, true);
    assert.ok(since(clock, seen) >= 1300 && since(clock, seen) < 1500, `ended ${since(clock, seen)} ms after the change`);
    assert.match(w.detail, /kube-proxy \(iptables\) applied every change \(last sync \+1300 ms from the slice change\), minSyncPeriod 1000 ms/);
  });

  it('kube-proxy that applied the change before the agent saw it: ends after minSyncPeriod (no sync will come)', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const seen = clock.now();
    const dp = new DataPlane(new FakeProxy(clock, [seen - 40], [seen - 10]), 2000, clock, silentLogger());
    const w = await dp.wait(seen, seen + 5000);
    assert.equal(w.done, true);
    assert.ok(since(clock, seen) >= 1000 && since(clock, seen) < 1200, `ended ${since(clock, seen)} ms after the change`);
    assert.match(w.detail, /last sync -10 ms/);
  });

  it('with a change still pending when minSyncPeriod is over, waits for the sync that applies it', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const seen = clock.now();
    const dp = new DataPlane(new FakeProxy(clock, [seen + 10, seen + 900], [seen + 100, seen + 2100]), 2000, clock, silentLogger());
    await dp.wait(seen, seen + 5000);
    assert.ok(since(clock, seen) >= 2100 && since(clock, seen) < 2300, `ended ${since(clock, seen)} ms after the change`);
  });

  it('stops at the bound and says so', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const seen = clock.now();
    const w = await new DataPlane(new FakeProxy(clock, [seen + 10], [seen - 10]), 2000, clock, silentLogger()).wait(seen, seen + 700);
    assert.equal(w.done, false);
    assert.equal(since(clock, seen), 700);
    assert.match(w.detail, /still had changes to apply at the drain bound/);
  });

  it('a read that fails after kube-proxy was readable is tried again; the wait still ends on kube-proxy', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const seen = clock.now();
    const proxy = new FakeProxy(clock, [seen + 20], [seen - 300, seen + 1300]);
    const dp = new DataPlane(proxy, 2000, clock, silentLogger());
    const waiting = dp.wait(seen, seen + 5000);
    // Down for 400 ms from 200 ms on (three polls fail), then answering again.
    const real = proxy.sample.bind(proxy);
    proxy.sample = () => (since(clock, seen) >= 200 && since(clock, seen) < 600 ? Promise.reject(new Error(`${proxy.url}/metrics: This operation was aborted`)) : real());
    const w = await waiting;
    assert.equal(w.way, 'kube-proxy');
    assert.equal(w.done, true);
    assert.ok(since(clock, seen) >= 1300 && since(clock, seen) < 1500, `ended ${since(clock, seen)} ms after the change`);
    assert.match(w.detail, /applied every change .*: \d+ ms \(4 reads of its metrics failed and tried again\)$/);
  });

  it('reads failing for the whole settle time give the observation up for the settle time, and say so', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const seen = clock.now();
    const proxy = new FakeProxy(clock, [seen + 20], [seen + 5000]);
    const dp = new DataPlane(proxy, 2000, clock, silentLogger());
    const waiting = dp.wait(seen, seen + 10_000);
    // Readable at first, then lost for good from 100 ms on.
    const real = proxy.sample.bind(proxy);
    proxy.sample = () => (since(clock, seen) >= 100 ? Promise.reject(new Error(`${proxy.url}/metrics: ECONNREFUSED`)) : real());
    const w = await waiting;
    assert.equal(w.way, 'settle');
    assert.ok(since(clock, seen) >= 2000 && since(clock, seen) < 2300, `ended ${since(clock, seen)} ms after the change`);
    assert.match(w.detail, /settle 2000 ms \(kube-proxy metrics lost for 2\d{3} ms: .*ECONNREFUSED\)/);
  });

  it('falls back to the settle time when kube-proxy cannot be read, and says why', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const seen = clock.now();
    const proxy = new FakeProxy(clock, [], []);
    proxy.down = true;
    const w = await new DataPlane(proxy, 2000, clock, silentLogger()).wait(seen, seen + 5000);
    assert.equal(w.way, 'settle');
    assert.equal(since(clock, seen), 2000);
    assert.match(w.detail, /settle 2000 ms \(kube-proxy metrics unreadable: .*ECONNREFUSED\)/);
    const none = await new DataPlane(undefined, 300, clock, silentLogger()).wait(clock.now(), clock.now() + 5000);
    assert.equal(none.way, 'settle');
    assert.equal(none.waitedMs, 300);
  });
});

describe('drain: the Drainer', () => {
  const settle = (clock: ManualClock, ms = 1000) => new DataPlane(undefined, ms, clock, silentLogger());

  it('waits until the slices let the address go, then for the data plane, within the bound', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const api = scriptedApi([
      [slice('a', 'web', [['10.0.0.5', true], ['10.0.0.6', true]])],
      [slice('a', 'web', [['10.0.0.5', true], ['10.0.0.6', true]])],
      [slice('a', 'web', [['10.0.0.5', false], ['10.0.0.6', true]])],
    ]);
    const d = new Drainer(polledSlices(api, clock), settle(clock), clock);
    const began = clock.now();
    const r = await d.drain('op1/', 'shop', A, 5000);
    assert.equal(r.drained, true);
    assert.equal(clock.now() - began, 200 + 1000, 'two looks at the slices, then the settle time');
    assert.match(r.detail, /^EndpointSlices a let the address go: 200 ms; settle 1000 ms/);
    assert.deepEqual(r.parts, [{ part: 'slices', ms: 200, done: true }, { part: 'dataplane', ms: 1000, done: true }]);
    await d.release('op1/');
  });

  it('a first view that already shows the address not ready (the condition was quicker) still waits for the data plane', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const api = scriptedApi([[slice('a', 'web', [['10.0.0.5', false], ['10.0.0.6', true]])]]);
    const d = new Drainer(polledSlices(api, clock), settle(clock), clock);
    const began = clock.now();
    const r = await d.drain('op1/', 'shop', A, 5000);
    assert.equal(clock.now() - began, 1000, 'the settle time, from the first view');
    assert.match(r.detail, /^EndpointSlices a let the address go: 0 ms; settle 1000 ms/);
    await d.release('op1/');
  });

  it('does not wait for the only ready endpoint of its Service, and measures the window without one', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const script = [
      [slice('a', 'solo', [['10.0.0.5', true]])],
      [slice('a', 'solo', [['10.0.0.5', false]])],
      [slice('a', 'solo', [['10.0.0.5', false]])],
      [slice('a', 'solo', [['10.0.0.5', true]])],
    ];
    const api = scriptedApi(script);
    const d = new Drainer(polledSlices(api, clock), settle(clock), clock);
    const began = clock.now();
    const r = await d.drain('op1/', 'shop', A, 5000);
    assert.equal(clock.now(), began, 'nothing waited for');
    assert.match(r.detail, /the only ready endpoint of solo/);
    const back = await d.readyAgain('op1/', 'shop', A, 10_000);
    assert.equal(back.ready, true);
    assert.deepEqual(back.unserved, ['solo']);
    assert.equal(back.unservedMs, 200, 'from the first view without a ready endpoint to the first with one');
    assert.match(back.detail, /a ready endpoint again after 200 ms; solo had no ready endpoint for 200ms/);
  });

  it('says when the address is not ready again within the bound', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const d = new Drainer(polledSlices(scriptedApi([[slice('a', 'web', [['10.0.0.5', false], ['10.0.0.6', true]])]]), clock), settle(clock), clock);
    const back = await d.readyAgain('op2/', 'shop', A, 1000);
    assert.equal(back.ready, false);
    assert.equal(back.unservedMs, undefined);
    assert.match(back.detail, /not a ready endpoint again within 1000 ms/);
  });

  it('an address that no Service listed when it was drained has no way back to wait for', async () => {
    const clock = new ManualClock();
    const d = new Drainer(polledSlices(scriptedApi([[slice('a', 'web', [['10.0.0.6', true]])]]), clock), settle(clock), clock);
    const r = await d.drain('op4/', 'shop', A, 5000);
    assert.match(r.detail, /not an endpoint of any EndpointSlice/);
    const began = clock.now();
    const back = await d.readyAgain('op4/', 'shop', A, 10_000);
    assert.equal(clock.now(), began, 'nothing waited for');
    assert.equal(back.ready, false);
    assert.match(back.detail, /^not an endpoint of any Service: no way back to wait for$/);
  });

  it('drain 0 waits for nothing', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const d = new Drainer(polledSlices(scriptedApi([[slice('a', 'web', [['10.0.0.5', true]])]]), clock), settle(clock), clock);
    const r = await d.drain('op3/', 'shop', A, 0);
    assert.deepEqual(r, { drained: false, waitedMs: 0, detail: 'drain 0: nothing waited for', parts: [] });
    await d.release('op3/');
  });
});

describe('drain: a pod that cannot be drained', () => {
  const setup = () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const events: CoreV1Event[] = [];
    const api = { createEvent: (_ns: string, e: CoreV1Event) => (events.push(e), Promise.resolve()) } as unknown as KubeApi;
    const d = { events: new PodEvents(api, 'node1', clock, silentLogger()) } as unknown as WayBackDeps;
    const t = { name: 'app', oldImage: 'app:v1', newImage: 'app:v1' } as ContainerTarget;
    const op = { request: {} } as Operation;
    const pod: V1Pod = { metadata: { namespace: 'shop', name: 'web', uid: 'u1' } };
    return { d, t, op, pod, events };
  };

  it('with no preStop hook: "restarted undrained" in the result and a Warning event', async () => {
    const s = setup();
    noteUndrained(s.d, s.op, s.t, s.pod, { name: 'app' });
    await new Promise((r) => setImmediate(r));
    assert.match(s.t.traffic ?? '', /^restarted undrained: the pod has no readiness gate on inplace-agent.io\/ready and container app has no preStop hook/);
    assert.equal(s.events[0]?.reason, 'RestartedUndrained');
    assert.equal(s.events[0]?.type, 'Warning');
  });

  it('with a preStop hook: runs it as before, no event', async () => {
    const s = setup();
    noteUndrained(s.d, s.op, s.t, s.pod, { name: 'app', lifecycle: { preStop: { exec: { command: ['sleep', '1'] } } } });
    await new Promise((r) => setImmediate(r));
    assert.match(s.t.traffic ?? '', /its preStop hook ran before the stop/);
    assert.equal(s.events.length, 0);
  });
});
