// The fleet pre-warm's pure parts: the stable node order, the summary, who writes it, and create's flags.
import assert from 'node:assert/strict';
import { PrewarmUsageError, specFromFlags } from '../../src/cli/prewarm-command.js';
import { rankKey, seedsOf, stableOrder } from '../../src/fleet/node-order.js';
import { isSummarizer, sameSummary, summarize } from '../../src/fleet/summary.js';
import { queueWait, seedCheckEvery, waitsForSeeds } from '../../src/fleet/node-part.js';
import type { SlotLease } from '../../src/fleet/fleet-api.js';
import { handoffDelay, nextSlotMove, type TryState } from '../../src/fleet/slot-watch.js';
import type { ImagePrewarm, NodePrewarm, NodePrewarmEntry } from '../../src/fleet/types.js';
import { nodePhase } from '../../src/fleet/types.js';

const pw: ImagePrewarm = { metadata: { name: 'web', generation: 3 }, spec: { images: ['r/a:1'] } };
const entry = (phase: NodePrewarmEntry['phase'], generation = 3, message?: string): NodePrewarmEntry => ({
  generation,
  phase,
  firstSeen: '2026-01-01T00:00:00Z',
  images: [{ image: 'r/a:1', phase, bytesDone: 0, bytesTotal: 0, attempts: 1, message }],
});
const record = (node: string, e?: NodePrewarmEntry): NodePrewarm => ({ metadata: { name: node }, spec: { nodeName: node }, status: { prewarms: e ? { web: e } : {} } });

describe('fleet pre-warm: stable node order', () => {
  it('is the same whatever order the nodes are listed in, and differs between prewarms', () => {
    const nodes = Array.from({ length: 50 }, (_, i) => `node-${i}`);
    const a = stableOrder('web', nodes);
    const b = stableOrder('web', [...nodes].reverse());
    assert.deepEqual(a, b);
    assert.equal(new Set(a).size, 50);
    assert.notDeepEqual(stableOrder('other', nodes), a, 'another prewarm seeds other nodes');
    for (let i = 1; i < a.length; i++) assert.ok(rankKey('web', a[i - 1]!) <= rankKey('web', a[i]!));
  });

  it('seeds are the first N, bounded by the node count', () => {
    const order = ['x', 'y', 'z'];
    assert.deepEqual(seedsOf(order, 2), ['x', 'y']);
    assert.deepEqual(seedsOf(order, 9), order);
    assert.deepEqual(seedsOf(order, 0), []);
  });
});

describe('fleet pre-warm: the summary', () => {
  it('counts each targeted node once, by its record of the current generation', () => {
    const s = summarize(pw, ['a', 'b', 'c', 'd', 'e'], [
      record('a', entry('Succeeded')),
      record('b', entry('Pulling')),
      record('c', entry('Failed', 3, 'not found')),
      record('d', entry('Succeeded', 2)), // an older generation counts as waiting
      record('zz', entry('Succeeded')), // not targeted
    ]);
    assert.deepEqual(
      { desired: s.desired, succeeded: s.succeeded, pulling: s.pulling, failed: s.failed, waiting: s.waiting, gen: s.observedGeneration },
      { desired: 5, succeeded: 1, pulling: 1, failed: 1, waiting: 2, gen: 3 },
    );
    assert.deepEqual(s.failedNodes, [{ node: 'c', reason: 'ImagePullFailed', message: 'r/a:1: not found' }]);
  });

  it('the first node writes it; the second only when it went stale', () => {
    const order = ['a', 'b', 'c'];
    assert.equal(isSummarizer('a', order, undefined, 1000, 500), true);
    assert.equal(isSummarizer('c', order, undefined, 1000, 500), false);
    const fresh = { ...summarize(pw, order, []), lastSummaryTime: new Date(900).toISOString() };
    assert.equal(isSummarizer('b', order, fresh, 1000, 500), false);
    assert.equal(isSummarizer('b', order, fresh, 2000, 500), true);
  });

  it('sameSummary ignores who wrote it and when', () => {
    const a = summarize(pw, ['a'], [record('a', entry('Succeeded'))]);
    assert.equal(sameSummary({ ...a, summarizedBy: 'x', lastSummaryTime: 'then' }, a), true);
    assert.equal(sameSummary(a, summarize(pw, ['a'], [])), false);
  });

  it("a node's phase is the worst of its images", () => {
    const img = (phase: NodePrewarmEntry['phase']) => ({ image: 'i', phase, bytesDone: 0, bytesTotal: 0, attempts: 0 });
    assert.equal(nodePhase([img('Succeeded'), img('Failed'), img('Pulling')]), 'Failed');
    assert.equal(nodePhase([img('Succeeded'), img('Waiting'), img('Pulling')]), 'Pulling');
    assert.equal(nodePhase([img('Succeeded'), img('Waiting')]), 'Waiting');
    assert.equal(nodePhase([img('Succeeded')]), 'Succeeded');
  });
});

describe('inplacectl prewarm create: flags', () => {
  const base = { image: ['reg.local/web:1'], nodeSelector: [], pullSecret: [] };
  it('builds the spec, leaving out what was not given', () => {
    assert.deepEqual(specFromFlags({ ...base, nodeSelector: ['role=web'], maxParallel: '5', seeds: '1', refresh: '10m', pin: true, pullSecret: ['shop/regcred'] }), {
      images: ['reg.local/web:1'],
      nodeSelector: { role: 'web' },
      maxParallelNodes: 5,
      seedNodes: 1,
      refreshSeconds: 600,
      pin: true,
      imagePullSecrets: [{ namespace: 'shop', name: 'regcred' }],
    });
    assert.deepEqual(specFromFlags({ ...base, podSelector: 'shop/app=web,tier=fe' }).podSelector, { namespace: 'shop', matchLabels: { app: 'web', tier: 'fe' } });
  });

  it('refuses bad usage before anything is sent', () => {
    const bad: Record<string, unknown>[] = [
      { ...base, image: [] },
      { ...base, image: ['UPPER/Case::x'] },
      { ...base, maxParallel: '0' },
      { ...base, seeds: '-1' },
      { ...base, nodeSelector: ['novalue'] },
      { ...base, nodeSelector: ['a=b'], podSelector: 'ns/a=b' },
      { ...base, podSelector: 'app=web' },
      { ...base, pullSecret: ['only-name'] },
      { ...base, deadline: 'soon' },
    ];
    for (const o of bad) assert.throws(() => specFromFlags(o), PrewarmUsageError, JSON.stringify(o));
  });
});

describe('fleet pre-warm: a node far back in the queue polls less', () => {
  const order = Array.from({ length: 100 }, (_, i) => `n${i}`);
  const withStatus = (done: number): ImagePrewarm => ({
    metadata: { name: 'web', generation: 1 },
    spec: { images: ['r/a:1'] },
    status: { observedGeneration: 1, desired: 100, succeeded: done, failed: 0, pulling: 0, waiting: 100 - done, failedNodes: [] },
  });
  // random() = 0.5: the jitter spreads by nothing.
  const deps = (node: string, lastTry = 0, random = () => 0.5) => ({ node, pollMs: 1000, maxPollMs: 30_000, lastTry: new Map([['web', lastTry]]), random });

  it('tries now when within four rounds of slots, when the summary is missing or of another generation', () => {
    assert.equal(queueWait(deps('n12', 99_000), withStatus(0), order, 10, 100_000), 0);
    assert.equal(queueWait(deps('n90', 99_000), { ...withStatus(0), status: undefined }, order, 10, 100_000), 0);
    assert.equal(queueWait(deps('n90', 99_000), { ...withStatus(0), metadata: { name: 'web', generation: 2 } }, order, 10, 100_000), 0);
    assert.equal(queueWait(deps('n90', 99_000), withStatus(55), order, 10, 100_000), 0, '35 ahead with 10 slots');
  });

  it('waits when far back and tried lately, but never longer than maxPollMs since the last try', () => {
    assert.equal(queueWait(deps('n90', 99_000), withStatus(0), order, 10, 100_000), 2000, 'waits two polls, then looks again');
    assert.equal(queueWait(deps('n90', 99_000, () => 0), withStatus(0), order, 10, 100_000), 1500, 'the injected jitter: 25 % less at its lowest');
    assert.equal(queueWait(deps('n90', 99_000, () => 0.999), withStatus(0), order, 10, 100_000), 2499, 'and up to 25 % more at its highest');
    assert.equal(queueWait(deps('n90', 100_000 - 9_000), withStatus(0), order, 10, 100_000), 0, '9 rounds back: every 9 s');
    assert.ok(queueWait(deps('n90', 100_000 - 8_000), withStatus(0), order, 10, 100_000) > 0, 'not yet after 8 s');
    assert.equal(queueWait(deps('n99', 0), withStatus(0), order, 1, 100_000), 0, 'capped at maxPollMs');
  });
});

describe('fleet pre-warm: queue position extrapolated from the rate of the summaries', () => {
  const order = Array.from({ length: 1000 }, (_, i) => `n${i}`);
  const summary = (done: number, atMs: number): ImagePrewarm => ({
    metadata: { name: 'web', generation: 1 },
    spec: { images: ['r/a:1'] },
    status: { observedGeneration: 1, desired: 1000, succeeded: done, failed: 0, pulling: 0, waiting: 1000 - done, failedNodes: [], lastSummaryTime: new Date(atMs).toISOString() },
  });

  it('a node whose turn the front has reached since the last summary tries now; one still far back waits about until it is near', () => {
    const progress = new Map<string, { t: number; done: number; rate: number }>();
    const d = (node: string) => ({ node, pollMs: 1000, maxPollMs: 30_000, lastTry: new Map([['web', 999_000]]), progress, random: () => 0.5 });
    // 100 nodes done at t=995 s, 200 at t=1000 s: 20 nodes a second.
    assert.ok(queueWait(d('n300'), summary(100, 995_000), order, 10, 995_000) > 0, 'n300: 200 behind, 40 is the window');
    assert.ok(queueWait(d('n300'), summary(200, 1_000_000), order, 10, 1_000_000) > 0, 'n300: 100 behind at the summary');
    assert.equal(queueWait(d('n300'), summary(200, 1_000_000), order, 10, 1_003_500), 0, '3.5 s later about 270 are done: n300 is within 40 of them');
    const far = queueWait(d('n900'), summary(200, 1_000_000), order, 10, 1_000_000);
    assert.ok(far > 0 && far <= 2_500, `n900 looks again within two polls (${far})`);
  });
});

describe('fleet pre-warm: a freed slot is tried by the nodes next in line first', () => {
  const order = Array.from({ length: 20 }, (_, i) => `n${i}`);
  const index = new Map(order.map((n, i) => [n, i]));
  const now = 1_000_000;
  const held = (i: number, holder: string, renewMs = now - 1000): SlotLease => ({ name: `web-slot-${i}`, prewarm: 'web', holder, renewMs, acquireMs: renewMs, durationSeconds: 15, resourceVersion: '1' });

  it('nothing to try while every slot is held; the first expiry is when to look again', () => {
    const r = handoffDelay(index, 'n9', 'web', [held(0, 'n5'), held(1, 'n6', now - 10_000)], 2, now);
    assert.equal(r.tryInMs, undefined);
    assert.equal(r.expiresInMs, 5_000, 'slot 1 was renewed 10 s ago with a 15 s lease');
  });

  it('the node right after the furthest holder tries at once, the ones after it a step later each', () => {
    const leases = [held(0, 'n5'), held(2, 'n7')]; // slot 1 was given back (deleted)
    assert.equal(handoffDelay(index, 'n8', 'web', leases, 3, now).tryInMs, 0);
    assert.equal(handoffDelay(index, 'n9', 'web', leases, 3, now).tryInMs, 25);
    assert.equal(handoffDelay(index, 'n12', 'web', leases, 3, now).tryInMs, 100);
    assert.equal(handoffDelay(index, 'n8', 'web', leases, 3, now).slot, 1, 'for the free slot');
    const late = handoffDelay(index, 'n3', 'web', leases, 3, now).tryInMs!;
    assert.ok(late >= 25 && late <= 100, `a node behind the furthest holder (it lost a race) goes after the one in line, within four steps (${late})`);
  });

  it('with two free slots (one of them expired), the next two go at once', () => {
    const leases = [held(0, 'n5'), held(1, 'n6', now - 20_000)];
    assert.equal(handoffDelay(index, 'n6', 'web', leases, 3, now).tryInMs, 0);
    assert.equal(handoffDelay(index, 'n7', 'web', leases, 3, now).tryInMs, 0);
    assert.equal(handoffDelay(index, 'n8', 'web', leases, 3, now).tryInMs, 25);
  });
});

describe('fleet pre-warm: when a waiting node near the front tries for a slot', () => {
  const order = Array.from({ length: 10 }, (_, i) => `n${i}`);
  const index = new Map(order.map((n, i) => [n, i]));
  const now = 1_000_000;
  const o = { pollMs: 300, maxPollMs: 30_000, stepMs: 25 };
  const held = (i: number, holder: string, renewMs = now - 1000, durationSeconds = 3): SlotLease => ({ name: `web-slot-${i}`, prewarm: 'web', holder, renewMs, acquireMs: renewMs, durationSeconds, resourceVersion: '1' });

  it('a try lost with the watched view is tried again with a list within pollMs while the view does not move, not after maxPollMs', () => {
    // The view showed slot 1 free; the write lost (someone took it, and the watch has not shown that yet).
    const st: TryState = { lostVersion: 7, lostAt: now - 100, listedAt: now - 10_000 };
    const view = { leases: [held(0, 'n1')], version: 7 };
    assert.deepEqual(nextSlotMove(index, 'n3', 'web', view, st, 2, now, o), { wait: 200 }, 'waits out pollMs (a change wakes it sooner)');
    assert.deepEqual(nextSlotMove(index, 'n3', 'web', view, st, 2, now + 200, o), { try: 'list' }, 'then reads the slots itself');
  });

  it('a try lost with the view is tried again with the view once the view moved and shows a slot free for it', () => {
    const st: TryState = { lostVersion: 7, lostAt: now - 50, listedAt: now - 10_000 };
    const view = { leases: [held(0, 'n1')], version: 9 }; // slot 1 given back since
    assert.deepEqual(nextSlotMove(index, 'n2', 'web', view, st, 2, now, o), { try: 'view', slot: 1 });
  });

  it('an expired slot (its holder killed) is tried within pollMs of its expiry, with no change seen', () => {
    const st: TryState = { listedAt: now - 1000 };
    const dying = { leases: [held(0, 'n0', now - 2_950)], version: 4 }; // expires at now + 50, no event then
    let t = now;
    for (let i = 0; i < 10; i++) {
      const m = nextSlotMove(index, 'n1', 'web', dying, st, 1, t, o);
      if (!('wait' in m)) {
        assert.deepEqual(m, { try: 'view', slot: 0 });
        break;
      }
      assert.ok(m.wait > 0 && m.wait <= o.pollMs, JSON.stringify(m));
      t += m.wait;
    }
    assert.ok(t > now + 50 && t - (now + 50) <= o.pollMs, `tried ${t - now - 50} ms after the expiry`);
  });

  it('a turn counts from when the free slots were seen as they are: churn meanwhile starts it again', () => {
    const st: TryState = { listedAt: now - 1000 };
    // n2 holds slot 0, slot 1 is free: n5 is third in line (two steps).
    assert.deepEqual(nextSlotMove(index, 'n5', 'web', { leases: [held(0, 'n2', now)], version: 1 }, st, 2, now, o), { wait: 50 });
    // 40 ms later n3 has taken slot 1 and n2 has given slot 0 back: n5 is second in line, one step from now.
    assert.deepEqual(nextSlotMove(index, 'n5', 'web', { leases: [held(1, 'n3', now + 30)], version: 3 }, st, 2, now + 40, o), { wait: 25 });
  });

  it('a turn computed for an earlier free slot does not let a node jump the line for a later one', () => {
    const st: TryState = { listedAt: now - 1000 };
    // n2 holds slot 0; slot 1 was seen free: n5 is third in line after n2 (two steps).
    assert.deepEqual(nextSlotMove(index, 'n5', 'web', { leases: [held(0, 'n2', now)], version: 1 }, st, 2, now, o), { wait: 50 });
    // n3 took it before n5's turn; 5 s later n2 gives slot 0 back: n5 is second in line (after n4), not first.
    nextSlotMove(index, 'n5', 'web', { leases: [held(0, 'n2', now), held(1, 'n3', now)], version: 2 }, st, 2, now + 50, o);
    const later = nextSlotMove(index, 'n5', 'web', { leases: [held(1, 'n3', now + 4_000)], version: 3 }, st, 2, now + 5_000, o);
    assert.deepEqual(later, { wait: 25 }, 'n5 waits its turn');
  });

  it('a holder further along that gave its slot back does not move the front back: the next waiting node goes at once', () => {
    const st: TryState = { listedAt: now - 1000 };
    // n4 and n5 hold the slots; n6 waits.
    assert.ok('wait' in nextSlotMove(index, 'n6', 'web', { leases: [held(0, 'n4', now), held(1, 'n5', now)], version: 1 }, st, 2, now, o));
    // n5 finished first: the furthest holder is now n4, but n5 (done) is not in line any more, n6 is.
    assert.deepEqual(nextSlotMove(index, 'n6', 'web', { leases: [held(0, 'n4', now)], version: 2 }, st, 2, now + 10, o), { try: 'view', slot: 1 });
  });

  it('with no view (not listed yet, or the watch failed) it tries with a list, at most every pollMs', () => {
    assert.deepEqual(nextSlotMove(index, 'n3', 'web', { version: 0 }, { listedAt: now - 1000 }, 2, now, o), { try: 'list' });
    assert.deepEqual(nextSlotMove(index, 'n3', 'web', { version: 0 }, { listedAt: now - 100 }, 2, now, o), { wait: 200 });
  });

  it('a slot this node still holds (its agent restarted) is taken again at once', () => {
    const view = { leases: [held(0, 'n3'), held(1, 'n4')], version: 2 };
    assert.deepEqual(nextSlotMove(index, 'n3', 'web', view, { listedAt: now }, 2, now, o), { try: 'view' });
  });

  it('with every slot held and the view current, it waits (at most pollMs, no request), and reads the slots itself every maxPollMs', () => {
    const view = { leases: [held(0, 'n1', now), held(1, 'n2', now)], version: 2 };
    const w = nextSlotMove(index, 'n3', 'web', view, { listedAt: now - 1000 }, 2, now, o);
    assert.ok('wait' in w && w.wait > 0 && w.wait <= o.pollMs, JSON.stringify(w));
    assert.deepEqual(nextSlotMove(index, 'n3', 'web', view, { listedAt: now - 30_000 }, 2, now, o), { try: 'list' });
  });
});

describe('fleet pre-warm: waiting for the seeds', () => {
  it('the first round after the seeds reads their records every poll, the k-th round every k polls, at most maxPollMs', () => {
    // 4 nodes, 1 seed, 2 slots: the fourth node (third after the seed) is in the second round, and must not
    // wait maxPollMs when the summary that says the seeds are done is late.
    assert.equal(seedCheckEvery(0, 2, 300, 30_000), 300);
    assert.equal(seedCheckEvery(1, 2, 300, 30_000), 300);
    assert.equal(seedCheckEvery(2, 2, 300, 30_000), 600);
    assert.equal(seedCheckEvery(500, 20, 3_000, 30_000), 30_000);
  });

  it('with no seeds no node waits for them (a rollout pre-warm has none); with seeds every node but them waits', () => {
    const order = stableOrder('web', ['a', 'b', 'c']);
    for (const n of order) assert.equal(waitsForSeeds(seedsOf(order, 0), n), false, n);
    assert.deepEqual(order.map((n) => waitsForSeeds(seedsOf(order, 1), n)), [false, true, true]);
  });
});
