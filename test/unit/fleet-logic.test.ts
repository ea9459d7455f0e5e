// The fleet pre-warm's pure parts: the stable node order, the summary, who writes it, and create's flags.
import assert from 'node:assert/strict';
import { PrewarmUsageError, specFromFlags } from '../../src/cli/prewarm-command.js';
import { rankKey, seedsOf, stableOrder } from '../../src/controllers/image-prewarm/node-order.js';
import { isSummarizer, sameSummary, summarize } from '../../src/controllers/image-prewarm/summary.js';
import { seedCheckEvery, slotless, waitsForSeeds } from '../../src/controllers/image-prewarm/node-part.js';
import { chainMove, chainPlace, type ChainState } from '../../src/controllers/image-prewarm/slot-chain.js';
import type { ImagePrewarm, NodePrewarm, NodePrewarmEntry } from '../../src/controllers/image-prewarm/types.js';
import { nodePhase } from '../../src/controllers/image-prewarm/types.js';
import { PrewarmReasons } from '../../src/controllers/image-prewarm/reasons.js';
import { Reasons } from '../../src/engine/reasons.js';

const pw: ImagePrewarm = { metadata: { name: 'web', generation: 3 }, spec: { images: ['r/a:1'] } };
const entry = (phase: NodePrewarmEntry['phase'], generation = 3, message?: string): NodePrewarmEntry => ({
  generation,
  phase,
  firstSeen: '2026-01-01T00:00:00Z',
  images: [{ image: 'r/a:1', phase, bytesDone: 0, bytesTotal: 0, attempts: 1, message }],
});
const record = (node: string, e?: NodePrewarmEntry): NodePrewarm => ({ metadata: { name: node }, spec: { nodeName: node }, status: { prewarms: e ? { web: e } : {} } });

describe('fleet pre-warm: reasons', () => {
  it('words a failed or late image as the restart engine words the same failure', () => {
    assert.deepEqual({ PullFailed: PrewarmReasons.PullFailed, Deadline: PrewarmReasons.Deadline }, { PullFailed: Reasons.PullFailed, Deadline: Reasons.Deadline });
  });
});

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

describe('fleet pre-warm: slots are handed on along the stable order', () => {
  const order = Array.from({ length: 10 }, (_, i) => `n${i}`);
  const index = new Map(order.map((n, i) => [n, i]));
  const at = (node: string, seeds: number, parallel: number) => chainPlace(order, index, node, seeds, parallel)!;

  it('no seeds: the first P create slots 0..P-1, every node after is handed the slot of the node P before it, and the last P delete theirs', () => {
    assert.deepEqual(at('n0', 0, 3), { place: 0, role: 'start', home: 0, afterSeeds: false, successor: 'n3', parallel: 3 });
    assert.deepEqual(at('n2', 0, 3), { place: 2, role: 'start', home: 2, afterSeeds: false, successor: 'n5', parallel: 3 });
    assert.deepEqual(at('n5', 0, 3), { place: 5, role: 'handed', home: 2, afterSeeds: false, successor: 'n8', parallel: 3 });
    assert.equal(at('n7', 0, 3).successor, undefined, 'n10 does not exist: n7 deletes its slot');
    assert.equal(chainPlace(order, index, 'elsewhere', 0, 3), undefined);
  });

  it('one seed: the seed creates slot 0 and hands on to nobody; the first round waits for it, then creates slots 0..P-1', () => {
    assert.deepEqual(at('n0', 1, 3), { place: 0, role: 'start', home: 0, afterSeeds: false, successor: undefined, parallel: 3 });
    assert.deepEqual(at('n1', 1, 3), { place: 1, role: 'start', home: 0, afterSeeds: true, successor: 'n4', parallel: 3 });
    assert.deepEqual(at('n3', 1, 3), { place: 3, role: 'start', home: 2, afterSeeds: true, successor: 'n6', parallel: 3 });
    assert.deepEqual(at('n4', 1, 3), { place: 4, role: 'handed', home: 0, afterSeeds: false, successor: 'n7', parallel: 3 }, 'handed on by n1, never reads the seeds');
  });

  it('more seeds than slots: the seeds past P are handed on by the seeds, not by the first round', () => {
    assert.deepEqual(at('n0', 5, 2), { place: 0, role: 'start', home: 0, afterSeeds: false, successor: 'n2', parallel: 2 });
    assert.deepEqual(at('n3', 5, 2), { place: 3, role: 'handed', home: 1, afterSeeds: false, successor: undefined, parallel: 2 }, 'n5 is not a seed');
    assert.deepEqual(at('n5', 5, 2), { place: 5, role: 'start', home: 0, afterSeeds: true, successor: 'n7', parallel: 2 });
  });

  const o = { fallbackMs: 30_000, maxPollMs: 30_000 };
  const now = 1_000_000;

  it('a start node creates its slot once; when that failed (taken) it reads the slots itself every fallbackMs', () => {
    const st: ChainState = {};
    assert.deepEqual(chainMove(at('n1', 0, 3), st, undefined, now, now, o), { try: 'home' });
    st.homeTried = true;
    assert.deepEqual(chainMove(at('n1', 0, 3), st, undefined, now, now, o), { wait: 30_000 });
    assert.deepEqual(chainMove(at('n1', 0, 3), st, undefined, now, now + 30_000, o), { try: 'list' });
    st.listedAt = now + 30_000;
    assert.deepEqual(chainMove(at('n1', 0, 3), st, undefined, now, now + 40_000, o), { wait: 20_000 });
  });

  it('a handed node waits while its turn is ahead (a hand-on wakes it), and reads the slots itself only fallbackMs after its turn came', () => {
    const st: ChainState = {};
    const n8 = at('n8', 0, 3);
    assert.deepEqual(chainMove(n8, st, { done: 4 }, now - 5_000, now, o), { wait: 30_000 }, '4 done: its predecessor n5 is not due yet');
    assert.deepEqual(chainMove(n8, st, { done: 5 }, now - 5_000, now + 1_000, o), { wait: 30_000 }, 'n5 is due now: n8 gives it fallbackMs');
    assert.equal(st.dueSince, now + 1_000);
    assert.deepEqual(chainMove(n8, st, { done: 6 }, now - 5_000, now + 20_000, o), { wait: 11_000 });
    assert.deepEqual(chainMove(n8, st, { done: 6 }, now - 5_000, now + 31_000, o), { try: 'list' }, 'no hand-on within fallbackMs: n5 died, or gave up');
  });

  it('with no summary of this generation yet, a handed node counts from when it saw the generation; a summary that says its turn is ahead sets that aside', () => {
    const st: ChainState = {};
    const n8 = at('n8', 0, 3);
    assert.deepEqual(chainMove(n8, st, undefined, now, now + 10_000, o), { wait: 20_000 });
    assert.deepEqual(chainMove(n8, st, { done: 0 }, now, now + 31_000, o), { wait: 30_000 }, 'the summary came: its turn is ahead');
    assert.deepEqual(chainMove(n8, st, undefined, now, now + 31_000, o), { try: 'list' }, 'no summary at all (its writer is gone): it reads the slots');
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

  it('a node pulls without a slot only when there are no seeds and every target fits in maxParallelNodes', () => {
    assert.equal(slotless(3, 0, 5), true, "a rollout's pre-warm of 3 nodes, 5 at once");
    assert.equal(slotless(5, 0, 5), true);
    assert.equal(slotless(6, 0, 5), false, 'one node more than the slots: slots bound them');
    assert.equal(slotless(3, 1, 5), false, 'seeds go first, through slots');
  });

  it('with no seeds no node waits for them (a rollout pre-warm has none); with seeds every node but them waits', () => {
    const order = stableOrder('web', ['a', 'b', 'c']);
    for (const n of order) assert.equal(waitsForSeeds(seedsOf(order, 0), n), false, n);
    assert.deepEqual(order.map((n) => waitsForSeeds(seedsOf(order, 1), n)), [false, true, true]);
  });
});
