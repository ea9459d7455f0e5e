import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { PullQueue, POSITION_WINDOW, type Release } from '../../src/pull/pull-queue.js';
import { ImagePullService } from '../../src/pull/pull-service.js';
import type { PullEvent } from '../../src/pull/types.js';
import { FakeRuntime, ManualClock } from '../support/pull-fakes.js';

/** Position notifications while n waiters queue behind one holder and are then served one by one. */
async function positionEvents(n: number): Promise<{ count: number; last: Map<number, number> }> {
  const q = new PullQueue(1);
  const first = await q.acquire();
  let count = 0;
  const last = new Map<number, number>();
  const granted: Promise<Release>[] = [];
  for (let i = 0; i < n; i++) {
    granted.push(
      q.acquire(undefined, (p) => {
        count++;
        last.set(i, p);
      }),
    );
  }
  first();
  for (const g of granted) (await g)();
  return { count, last };
}

/** Every event of one PullImages of n distinct images (pulls end at once, two at a time node-wide). */
async function pullEvents(n: number): Promise<number> {
  const rt = new FakeRuntime();
  rt.autoFinish = () => ({});
  const svc = new ImagePullService({ runtime: rt.asRuntime(), maxParallel: 2, progressIntervalMs: 0, metricsRegistry: new Registry(), clock: new ManualClock() });
  const images = Array.from({ length: n }, (_, i) => `127.0.0.1:5000/inplace/img${i}:v1`);
  let events = 0;
  const res: PullEvent[] = await svc.pull({ images, parallel: 4 }, () => events++);
  assert.ok(res.every((e) => e.phase === 'Done'), 'every image pulled');
  return events;
}

/**
 * The cost of one more item stays the same from the smallest to the largest step (it doubles at every
 * doubling of n when the growth is quadratic).
 */
function assertLinear(counts: { n: number; events: number }[]): void {
  const marginal = (i: number) => (counts[i].events - counts[i - 1].events) / (counts[i].n - counts[i - 1].n);
  const first = marginal(1);
  const last = marginal(counts.length - 1);
  assert.ok(last <= first * 1.1, `${JSON.stringify(counts)}: events per extra item went from ${first.toFixed(1)} to ${last.toFixed(1)}`);
}

describe('Pull queue: events grow linearly with the number of waiters', () => {
  it('sends each waiter its position on joining, then only within the front window', async () => {
    const { count, last } = await positionEvents(400);
    // 1 on joining + at most POSITION_WINDOW moves inside the window, per waiter.
    assert.ok(count <= 400 * (POSITION_WINDOW + 1), `${count} position events for 400 waiters`);
    // Every waiter was last told position 1 (it reached the front) except those that joined within the window.
    assert.equal(last.get(399), 1);
    assert.equal(last.get(0), 1);
  });

  it('each extra waiter costs the same number of position events (was quadratic: 20,301 events for 200 images)', async () => {
    const counts = [];
    for (const n of [100, 200, 400, 800]) counts.push({ n, events: (await positionEvents(n)).count });
    console.log(`      position events: ${counts.map((c) => `${c.n} waiters -> ${c.events}`).join(', ')}`);
    assertLinear(counts);
  });

  it('a PullImages of N images sends O(N) events in all', async () => {
    const counts = [];
    for (const n of [50, 100, 200, 400]) counts.push({ n, events: await pullEvents(n) });
    console.log(`      PullImages events: ${counts.map((c) => `${c.n} images -> ${c.events}`).join(', ')}`);
    for (const c of counts) assert.ok(c.events <= c.n * 2 * (POSITION_WINDOW + 3), `${c.events} events for ${c.n} images`);
    assertLinear(counts);
  });

  it('a waiter that leaves inside the window moves only the waiters behind it in the window', async () => {
    const q = new PullQueue(1);
    const hold = await q.acquire();
    const seen: number[][] = Array.from({ length: 30 }, () => []);
    const aborts = seen.map(() => new AbortController());
    const waits = seen.map((s, i) => q.acquire(aborts[i].signal, (p) => s.push(p)));
    waits.forEach((w) => w.catch(() => undefined));
    aborts[2].abort(new Error('gone'));
    await assert.rejects(waits[2], /gone/);
    assert.deepEqual(seen[1], [2], 'ahead of it: unchanged');
    assert.deepEqual(seen[3], [4, 3], 'behind it in the window: told');
    assert.deepEqual(seen[POSITION_WINDOW], [POSITION_WINDOW + 1, POSITION_WINDOW], 'moved into the window: told');
    assert.deepEqual(seen[20], [21], 'far back: not told yet');
    assert.equal(q.waiting, 29);
    hold();
    for (const [i, w] of waits.entries()) if (i !== 2) (await w)();
    assert.equal(seen[20].at(-1), 1);
  });
});

describe('Pull service: one request of many images', () => {
  it('logs no MaxListenersExceededWarning for 200 images under one signal', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const rt = new FakeRuntime();
      rt.autoFinish = () => ({});
      const svc = new ImagePullService({ runtime: rt.asRuntime(), maxParallel: 2, progressIntervalMs: 0, metricsRegistry: new Registry(), clock: new ManualClock() });
      const images = Array.from({ length: 200 }, (_, i) => `127.0.0.1:5000/inplace/w${i}:v1`);
      await svc.pull({ images }, () => undefined, new AbortController().signal);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings.filter((w) => w === 'MaxListenersExceededWarning'), []);
  });
});
