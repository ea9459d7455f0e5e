import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { AgentError } from '../../src/errors.js';
import { ImagePullService, type PullServiceOptions } from '../../src/pull/pull-service.js';
import type { PullEvent } from '../../src/pull/types.js';
import { FakeRuntime, flush, ManualClock } from '../support/pull-fakes.js';

const IMG = '127.0.0.1:5000/inplace/app:v1';
const IMG2 = '127.0.0.1:5000/inplace/app:v2';

/** The service on a manual clock: nothing in these tests waits for real time. */
function service(rt: FakeRuntime, opts: Partial<PullServiceOptions> = {}) {
  const registry = new Registry();
  const clock = new ManualClock();
  const svc = new ImagePullService({ runtime: rt.asRuntime(), backoff: { initialMs: 1000, maxMs: 4000, jitter: 0 }, progressIntervalMs: 0, metricsRegistry: registry, clock, ...opts });
  return { svc, registry, clock };
}

async function metric(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = (m?.values as { value: number; labels: Record<string, string> }[] | undefined)?.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v?.value ?? 0;
}

describe('ImagePullService: single flight', () => {
  it('runs one runtime pull for two requests of one image; both see its progress and Done', async () => {
    const rt = new FakeRuntime();
    const { svc, registry } = service(rt);
    const a: PullEvent[] = [];
    const b: PullEvent[] = [];
    const pa = svc.pull({ images: [IMG] }, (e) => a.push(e));
    const pull = await rt.takePull();
    const pb = svc.pull({ images: ['127.0.0.1:5000/inplace/app:v1'] }, (e) => b.push(e));
    await flush();
    pull.progress({ bytesDone: 10, bytesTotal: 100 });
    pull.progress({ bytesDone: 60, bytesTotal: 100 });
    pull.finish();
    const [[ra], [rb]] = await Promise.all([pa, pb]);
    assert.equal(rt.pulls.length, 1);
    assert.equal(ra.phase, 'Done');
    assert.equal(rb.phase, 'Done');
    assert.equal(ra.digest, rb.digest);
    assert.ok(ra.digest.startsWith('127.0.0.1:5000/inplace/app@sha256:'));
    assert.ok(b.some((e) => e.bytesDone === 60), 'the second caller sees the shared progress');
    assert.equal(await metric(registry, 'inplace_image_pulls_total', { result: 'pulled' }), 1);
  });

  it('keeps pulling when one of two callers leaves, and cancels when the last one leaves', async () => {
    const rt = new FakeRuntime();
    const { svc, registry } = service(rt);
    const ca = new AbortController();
    const cb = new AbortController();
    const pa = svc.pull({ images: [IMG] }, () => undefined, ca.signal);
    const pull = await rt.takePull();
    const pb = svc.pull({ images: [IMG] }, () => undefined, cb.signal);
    await flush();
    ca.abort();
    const [ra] = await pa;
    assert.equal(ra.phase, 'Failed');
    assert.equal(ra.errorKind, 'Cancelled');
    assert.equal(pull.opts.signal?.aborted, false, 'the pull goes on for the other caller');
    cb.abort();
    const [rb] = await pb;
    assert.equal(rb.errorKind, 'Cancelled');
    await flush();
    assert.equal(pull.opts.signal?.aborted, true, 'nobody waits: the runtime pull is cancelled');
    assert.equal(await metric(registry, 'inplace_image_pulls_total', { result: 'cancelled' }), 1);
    assert.deepEqual(svc.activePulls(), []);
  });

  it('ensure() shares the flight with a request and reports it pulled', async () => {
    const rt = new FakeRuntime();
    const { svc } = service(rt);
    const pr = svc.pull({ images: [IMG] }, () => undefined);
    const pull = await rt.takePull();
    const seen: number[] = [];
    const pe = svc.ensure(IMG, { onProgress: (p) => seen.push(p.bytesDone) });
    await flush();
    pull.progress({ bytesDone: 5, bytesTotal: 10 });
    pull.finish();
    const got = await pe;
    await pr;
    assert.equal(got.pulled, true);
    assert.ok(got.id.startsWith('sha256:'));
    assert.ok(seen.includes(5));
    assert.equal(rt.pulls.length, 1);
  });
});

describe('ImagePullService: IfNotPresent, digests, pin', () => {
  it('finds a present image by tag and by repo digest without pulling', async () => {
    const rt = new FakeRuntime();
    const digest = 'sha256:' + 'e'.repeat(64);
    rt.images.push({ id: 'sha256:' + 'f'.repeat(64), repoTags: [IMG], repoDigests: [`127.0.0.1:5000/inplace/app@${digest}`], size: 1, pinned: false });
    const { svc, registry } = service(rt);
    const [byTag, byDigest] = await svc.pull({ images: [IMG, `127.0.0.1:5000/inplace/app@${digest}`], pin: true }, () => undefined);
    assert.equal(byTag.phase, 'Done');
    assert.equal(byTag.alreadyPresent, true);
    assert.equal(byTag.digest, `127.0.0.1:5000/inplace/app@${digest}`);
    assert.equal(byDigest.alreadyPresent, true);
    assert.equal(byTag.pinned, true);
    assert.equal(rt.pulls.length, 0);
    assert.equal(await metric(registry, 'inplace_image_pulls_total', { result: 'present' }), 2);
  });

  it('pulls a digest reference, verifies it and reports it; a mismatch fails', async () => {
    const rt = new FakeRuntime();
    const digest = 'sha256:' + '1'.repeat(64);
    rt.autoFinish = (ref) => ({ digest: ref.includes('1111') ? `127.0.0.1:5000/inplace/app@${digest}` : `127.0.0.1:5000/inplace/app@sha256:${'2'.repeat(64)}` });
    const { svc } = service(rt);
    const [ok] = await svc.pull({ images: [`127.0.0.1:5000/inplace/app@${digest}`] }, () => undefined);
    assert.equal(ok.phase, 'Done');
    assert.equal(ok.digest, `127.0.0.1:5000/inplace/app@${digest}`);
    const other = 'sha256:' + '3'.repeat(64);
    const [bad] = await svc.pull({ images: [`127.0.0.1:5000/inplace/app@${other}`] }, () => undefined);
    assert.equal(bad.phase, 'Failed');
    assert.match(bad.error, new RegExp(`not ${other}`));
  });

  it('reports pinned false where the runtime cannot pin', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = () => ({});
    const svc = new ImagePullService({ runtime: rt.asRuntime(false), metricsRegistry: new Registry(), clock: new ManualClock() });
    const [e] = await svc.pull({ images: [IMG], pin: true }, () => undefined);
    assert.equal(e.phase, 'Done');
    assert.equal(e.pinned, false);
  });
});

describe('ImagePullService: queue, retries, deadlines, disk', () => {
  it('with parallel 1 the second image reports Queued with its position, then both are Done', async () => {
    const rt = new FakeRuntime();
    const { svc } = service(rt);
    const events: PullEvent[] = [];
    const p = svc.pull({ images: [IMG, IMG2], parallel: 1 }, (e) => events.push(e));
    const first = await rt.takePull();
    assert.equal(first.ref, IMG);
    const queued = events.find((e) => e.image === IMG2 && e.phase === 'Queued');
    assert.equal(queued?.queuePosition, 1);
    first.finish();
    (await rt.takePull()).finish();
    const res = await p;
    assert.deepEqual(res.map((e) => e.phase), ['Done', 'Done']);
  });

  it('holds pulls over the node-wide limit in FIFO order with positions', async () => {
    const rt = new FakeRuntime();
    const { svc, registry } = service(rt, { maxParallel: 1 });
    const events: PullEvent[] = [];
    const p = svc.pull({ images: [IMG, IMG2, '127.0.0.1:5000/inplace/app:v3'] }, (e) => events.push(e));
    const first = await rt.takePull();
    await flush();
    const pos = (img: string) => events.filter((e) => e.image === img && e.phase === 'Queued').map((e) => e.queuePosition);
    assert.deepEqual(pos(IMG2), [1]);
    assert.deepEqual(pos('127.0.0.1:5000/inplace/app:v3'), [2]);
    assert.equal(await metric(registry, 'inplace_image_pull_queue_length'), 2);
    first.finish();
    const second = await rt.takePull();
    assert.equal(second.ref, IMG2);
    await flush();
    assert.deepEqual(pos('127.0.0.1:5000/inplace/app:v3'), [2, 1]);
    second.finish();
    (await rt.takePull()).finish();
    await p;
  });

  it('does not retry a missing image and says so', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = () => new AgentError('NotFound', 'manifest unknown');
    const { svc } = service(rt);
    const [e] = await svc.pull({ images: [IMG] }, () => undefined);
    assert.equal(e.phase, 'Failed');
    assert.equal(e.errorKind, 'NotFound');
    assert.match(e.error, /not found/);
    assert.equal(rt.pulls.length, 1);
  });

  it('retries errors that can heal, reporting Retrying, then fails with the reason', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = () => new AgentError('Unavailable', 'dial tcp 127.0.0.1:1: connect: connection refused');
    const { svc, registry, clock } = service(rt, { retries: 2 });
    const events: PullEvent[] = [];
    const [e] = await clock.until(svc.pull({ images: [IMG] }, (x) => events.push(x)), 500);
    assert.equal(rt.pulls.length, 3);
    assert.equal(events.filter((x) => x.phase === 'Retrying').length, 2);
    assert.equal(e.phase, 'Failed');
    assert.equal(e.attempt, 3);
    assert.match(e.error, /connection refused/);
    assert.equal(await metric(registry, 'inplace_image_pulls_total', { result: 'failed' }), 1);
  });

  it('waits the backoff on the clock between attempts: no second attempt before the delay, then at once', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = (_ref, n) => (n < 3 ? new AgentError('Unavailable', 'connection reset') : {});
    const { svc, clock } = service(rt);
    const p = svc.pull({ images: [IMG] }, () => undefined);
    await flush();
    assert.equal(rt.pulls.length, 1);
    await clock.advance(999);
    assert.equal(rt.pulls.length, 1, 'the first retry waits its whole 1 s');
    await clock.advance(1);
    assert.equal(rt.pulls.length, 2);
    await clock.advance(1999);
    assert.equal(rt.pulls.length, 2, 'the second retry waits twice as long');
    await clock.advance(1);
    const [e] = await p;
    assert.equal(e.phase, 'Done');
    assert.equal(e.attempt, 3);
    assert.equal(e.elapsedMs, 3000);
  });

  it('sends each phase change once, even with byte progress pending', async () => {
    const rt = new FakeRuntime();
    const { svc, clock } = service(rt, { progressIntervalMs: 50, backoff: { initialMs: 150, jitter: 0 } });
    const events: PullEvent[] = [];
    const p = svc.pull({ images: [IMG] }, (e) => events.push(e));
    const first = await rt.takePull();
    first.progress({ bytesDone: 1, bytesTotal: 10 });
    first.progress({ bytesDone: 2, bytesTotal: 10 });
    first.fail(new AgentError('Unavailable', 'connection reset'));
    await clock.advance(150);
    const second = await rt.takePull();
    first.progress({ bytesDone: 3, bytesTotal: 10 });
    await clock.advance(100);
    second.finish();
    await p;
    assert.deepEqual(
      events.filter((e) => e.phase !== 'Pulling').map((e) => e.phase),
      ['Retrying', 'Done'],
    );
    assert.ok(!events.some((e) => e.attempt === 2 && e.bytesDone === 3), 'a late report of attempt 1 is dropped');
  });

  it('succeeds on a retry', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = (_ref, n) => (n < 2 ? new AgentError('Unavailable', 'connection reset') : {});
    const { svc, clock } = service(rt);
    const [e] = await clock.until(svc.pull({ images: [IMG] }, () => undefined), 500);
    assert.equal(e.phase, 'Done');
    assert.equal(e.attempt, 2);
  });

  it('fails an attempt with no new bytes for the stall timeout, but not while extracting', async () => {
    const rt = new FakeRuntime();
    const { svc, clock } = service(rt, { stallTimeoutMs: 80_000, retries: 0 });
    const p = svc.pull({ images: [IMG] }, () => undefined);
    const pull = await rt.takePull();
    pull.progress({ bytesDone: 1, bytesTotal: 10, extracting: true });
    await clock.advance(200_000);
    assert.equal(pull.opts.signal?.aborted, false, 'extracting holds the stall deadline');
    pull.progress({ bytesDone: 10, bytesTotal: 10, extracting: false });
    await clock.advance(60_000);
    assert.equal(pull.opts.signal?.aborted, false, 'not stalled before the stall timeout');
    await clock.advance(21_000);
    const [e] = await p;
    assert.equal(e.phase, 'Failed');
    assert.equal(e.errorKind, 'DeadlineExceeded');
    assert.match(e.error, /stalled: no new bytes/);
    assert.equal(pull.opts.signal?.aborted, true);
  });

  it('fails a pull past its overall timeout, not before', async () => {
    const rt = new FakeRuntime();
    const { svc, clock } = service(rt, { stallTimeoutMs: 0 });
    const events: PullEvent[] = [];
    const p = svc.pull({ images: [IMG], timeoutMs: 50_000 }, (e) => events.push(e));
    const pull = await rt.takePull();
    await clock.advance(49_999);
    assert.equal(pull.opts.signal?.aborted, false);
    assert.ok(!events.some((e) => e.phase === 'Failed'));
    await clock.advance(1);
    const [e] = await p;
    assert.equal(e.errorKind, 'DeadlineExceeded');
    assert.match(e.error, /did not finish within 50\.0s/);
    assert.equal(e.elapsedMs, 50_000);
  });

  it('fails a pull past the service\'s timeout (--pull-timeout), retries included', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = () => new AgentError('Unavailable', 'connection reset');
    const { svc, clock } = service(rt, { stallTimeoutMs: 0, timeoutMs: 10_000, retries: 100, backoff: { initialMs: 3000, maxMs: 3000, jitter: 0 } });
    const p = svc.pull({ images: [IMG] }, () => undefined);
    await clock.advance(9_999);
    assert.equal(rt.pulls.length, 4, 'attempts at 0, 3, 6 and 9 s');
    await clock.advance(1);
    const [e] = await p;
    assert.equal(e.errorKind, 'DeadlineExceeded');
    assert.match(e.error, /did not finish within 10\.0s \(--pull-timeout\)/);
  });

  it('refuses to pull below the free-disk floor with a clear message', async () => {
    const rt = new FakeRuntime();
    rt.freeBytes = 100 * 1024 * 1024;
    const { svc } = service(rt, { minFreeDiskBytes: 1024 ** 3 });
    const [e] = await svc.pull({ images: [IMG] }, () => undefined);
    assert.equal(e.errorKind, 'ResourceExhausted');
    assert.match(e.error, /only 100\.0 MiB free on the image filesystem \/var\/lib\/fake, below the minimum of 1\.0 GiB/);
    assert.equal(rt.pulls.length, 0);
  });

  it('fails a bad reference at once', async () => {
    const rt = new FakeRuntime();
    const { svc } = service(rt);
    const [e] = await svc.pull({ images: ['Bad Ref!'] }, () => undefined);
    assert.equal(e.errorKind, 'InvalidArgument');
  });

  it('passes the matching credentials to the runtime and keeps secrets out of errors', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = () => new AgentError('Internal', 'denied for password pa55word-x');
    const { svc } = service(rt, { retries: 0 });
    const keyring = new Map([['127.0.0.1:5000', { username: 'u', password: 'pa55word-x' }]]);
    const [e] = await svc.pull({ images: [IMG], keyring }, () => undefined);
    assert.equal(rt.pulls[0].opts.auth?.username, 'u');
    assert.doesNotMatch(e.error, /pa55word-x/);
  });
});
