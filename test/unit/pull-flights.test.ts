// Who shares a flight, and what each caller of it gets: credentials, `always`, its own timeout, leaving.
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { AgentError } from '../../src/errors.js';
import { PullFlight } from '../../src/pull/pull-flight.js';
import { ImagePullService, type PullServiceOptions } from '../../src/pull/pull-service.js';
import type { PullEvent } from '../../src/pull/types.js';
import { FakeRuntime, flush, ManualClock, memoryLogger } from '../support/pull-fakes.js';

const IMG = 'reg.example/private/app:1';
const IMG2 = 'reg.example/private/app:2';
const keyring = (username: string, password: string) => new Map([['reg.example', { username, password }]]);

/** The service on a manual clock (a test that moves time passes its own). */
function service(rt: FakeRuntime, opts: Partial<PullServiceOptions> = {}) {
  const registry = new Registry();
  const svc = new ImagePullService({ runtime: rt.asRuntime(), backoff: { initialMs: 1000, maxMs: 2000, jitter: 0 }, progressIntervalMs: 0, stallTimeoutMs: 0, metricsRegistry: registry, clock: new ManualClock(), ...opts });
  return { svc, registry };
}

async function metric(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = (m?.values as { value: number; labels: Record<string, string>; metricName?: string }[] | undefined)?.find(
    (x) => (x.metricName ?? name) === (name.endsWith('_seconds') ? `${name}_count` : name) && Object.entries(labels).every(([k, val]) => x.labels[k] === val),
  );
  return v?.value ?? 0;
}

const lastOf = (events: PullEvent[]) => events[events.length - 1];

describe('pull flights: credentials are part of what is shared', () => {
  it('an authenticated caller does not attach to an unauthenticated pull of the same image', async () => {
    const rt = new FakeRuntime();
    const { svc } = service(rt);
    const pa = svc.pull({ images: [IMG] }, () => undefined);
    const anon = await rt.takePull();
    const pb = svc.pull({ images: [IMG], keyring: keyring('bob', 's3cret') }, () => undefined);
    const authed = await rt.takePull();
    assert.equal(anon.opts.auth, undefined);
    assert.equal(authed.opts.auth?.username, 'bob');
    anon.fail(new AgentError('Unauthenticated', 'failed to resolve reference: 401 Unauthorized'));
    authed.finish();
    const [[ra], [rb]] = await Promise.all([pa, pb]);
    assert.equal(ra.errorKind, 'Unauthenticated');
    assert.equal(rb.phase, 'Done', 'the authenticated caller gets its own pull');
  });

  it('the node\'s ensure() is not failed by a caller with a wrong password, and nobody sees that caller\'s user name', async () => {
    const rt = new FakeRuntime();
    const { logger, lines } = memoryLogger();
    const { svc } = service(rt, { keyring: keyring('node', 'node-pw'), logger, retries: 0 });
    const pa = svc.pull({ images: [IMG], keyring: keyring('alice', 'wrong-pw') }, () => undefined);
    const wrong = await rt.takePull();
    const pe = svc.ensure(IMG);
    const good = await rt.takePull();
    assert.equal(good.opts.auth?.username, 'node');
    wrong.fail(new AgentError('Unauthenticated', 'pull access denied'));
    good.finish();
    const [ra] = await pa;
    const ensured = await pe;
    assert.equal(ensured.pulled, true);
    assert.equal(ra.errorKind, 'Unauthenticated');
    assert.doesNotMatch(ra.error, /alice|wrong-pw/);
    assert.ok(!lines.some((l) => /alice|wrong-pw|node-pw/.test(l)), 'no user name or password in the logs');
  });

  it('an uncredentialed --always caller does not ride on an authenticated pull', async () => {
    const rt = new FakeRuntime();
    const { svc } = service(rt);
    const pa = svc.pull({ images: [IMG], keyring: keyring('alice', 'pw-alice') }, () => undefined);
    const authed = await rt.takePull();
    const pb = svc.pull({ images: [IMG], always: true }, () => undefined);
    const anon = await rt.takePull();
    assert.equal(anon.opts.auth, undefined);
    anon.fail(new AgentError('Unauthenticated', '401 Unauthorized'));
    authed.finish();
    const [[ra], [rb]] = await Promise.all([pa, pb]);
    assert.equal(ra.phase, 'Done');
    assert.equal(rb.errorKind, 'Unauthenticated');
  });

  it('callers with equal credentials (from different keyrings) share one pull; active pulls name only the image', async () => {
    const rt = new FakeRuntime();
    const { svc } = service(rt);
    const pa = svc.pull({ images: [IMG], keyring: keyring('bob', 's3cret') }, () => undefined);
    const pull = await rt.takePull();
    const pb = svc.pull({ images: [IMG], keyring: keyring('bob', 's3cret') }, () => undefined);
    await flush();
    assert.deepEqual(svc.activePulls(), ['reg.example/private/app:1']);
    pull.finish();
    const [[ra], [rb]] = await Promise.all([pa, pb]);
    assert.equal(rt.pulls.length, 1);
    assert.equal(ra.phase, 'Done');
    assert.equal(rb.phase, 'Done');
  });
});

describe('pull flights: always', () => {
  it('an --always caller arriving during another caller\'s presence check still pulls', async () => {
    const rt = new FakeRuntime();
    rt.images.push({ id: 'sha256:' + 'a'.repeat(64), repoTags: [IMG], repoDigests: [], size: 1, pinned: false });
    const { svc } = service(rt);
    const release = rt.hold('inspectImage');
    const pa = svc.pull({ images: [IMG] }, () => undefined);
    await flush();
    const pb = svc.pull({ images: [IMG], always: true }, () => undefined);
    release();
    (await rt.takePull()).finish();
    const [[ra], [rb]] = await Promise.all([pa, pb]);
    assert.equal(ra.alreadyPresent, true);
    assert.equal(rb.phase, 'Done');
    assert.equal(rb.alreadyPresent, false);
    assert.equal(rt.pulls.length, 1, 'the --always caller pulled');
  });

  it('an IfNotPresent caller shares a running --always pull', async () => {
    const rt = new FakeRuntime();
    const { svc } = service(rt);
    const pa = svc.pull({ images: [IMG], always: true }, () => undefined);
    const pull = await rt.takePull();
    const pe = svc.ensure(IMG);
    await flush();
    pull.finish();
    await pa;
    assert.equal((await pe).pulled, true);
    assert.equal(rt.pulls.length, 1);
  });
});

describe('pull flights: leaving and cancelled flights', () => {
  it('a new caller does not attach to a flight whose callers all left', async () => {
    const rt = new FakeRuntime();
    const { svc, registry } = service(rt);
    const release = rt.hold('inspectImage');
    const ca = new AbortController();
    const pa = svc.pull({ images: [IMG] }, () => undefined, ca.signal);
    await flush();
    ca.abort();
    const [ra] = await pa;
    assert.equal(ra.errorKind, 'Cancelled');
    const pb = svc.pull({ images: [IMG] }, () => undefined);
    release();
    (await rt.takePull()).finish();
    const [rb] = await pb;
    assert.equal(rb.phase, 'Done', 'the new caller gets a new flight, not the cancelled one');
    assert.equal(rt.pulls.length, 1, 'the cancelled flight never reached the runtime');
    assert.equal(await metric(registry, 'inplace_image_pulls_total', { result: 'cancelled' }), 1);
  });

  it('a flight whose last caller left during the disk check never reaches the runtime and has no duration', async () => {
    const rt = new FakeRuntime();
    const { svc, registry } = service(rt, { minFreeDiskBytes: 1 });
    const release = rt.hold('imageFsUsage');
    const ca = new AbortController();
    const pa = svc.pull({ images: [IMG] }, () => undefined, ca.signal);
    await flush();
    ca.abort();
    await pa;
    release();
    await flush();
    assert.equal(rt.pulls.length, 0);
    assert.deepEqual(svc.activePulls(), []);
    assert.equal(await metric(registry, 'inplace_image_pulls_total', { result: 'cancelled' }), 1);
    assert.equal(await metric(registry, 'inplace_image_pull_duration_seconds'), 0);
    assert.equal(await metric(registry, 'inplace_image_pulls_in_progress'), 0);
  });

  it('a request whose signal is already aborted starts nothing', async () => {
    const rt = new FakeRuntime();
    const { svc } = service(rt);
    const [e] = await svc.pull({ images: [IMG] }, () => undefined, AbortSignal.abort());
    assert.equal(e.errorKind, 'Cancelled');
    await flush();
    assert.equal(rt.pulls.length, 0);
    assert.deepEqual(svc.activePulls(), []);
  });

  it('a caller whose sink throws on its first event does not break the flight', async () => {
    const clock = new ManualClock();
    const flight = new PullFlight('reg.example/private/app:1', clock, 0);
    const seen: PullEvent[] = [];
    const a = flight.attach(IMG, (e) => seen.push(e));
    flight.update({ phase: 'Pulling', attempt: 1 });
    const b = flight.attach(IMG, () => {
      throw new Error('broken sink');
    });
    flight.update({ bytesDone: 5, bytesTotal: 10 });
    flight.succeed({ imageId: 'sha256:x' });
    assert.equal((await a).phase, 'Done');
    assert.equal((await b).phase, 'Done');
    assert.ok(seen.some((e) => e.bytesDone === 5));
  });
});

describe('pull flights: byte progress on the clock', () => {
  it('progress within the interval is held, then sent once the interval has passed on the clock', async () => {
    const clock = new ManualClock();
    const flight = new PullFlight('reg.example/private/app:1', clock, 200);
    const seen: PullEvent[] = [];
    void flight.attach(IMG, (e) => seen.push(e));
    flight.update({ phase: 'Pulling', attempt: 1 });
    flight.update({ bytesDone: 1, bytesTotal: 10 });
    flight.update({ bytesDone: 2, bytesTotal: 10 });
    assert.deepEqual(seen.map((e) => e.bytesDone), [0]);
    await clock.advance(199);
    assert.deepEqual(seen.map((e) => e.bytesDone), [0], 'nothing before the interval');
    await clock.advance(1);
    assert.deepEqual(seen.map((e) => e.bytesDone), [0, 2], 'the latest progress, once');
    await clock.advance(1000);
    assert.equal(seen.length, 2);
    flight.update({ bytesDone: 3, bytesTotal: 10 });
    flight.succeed({ imageId: 'sha256:x' });
    await clock.advance(1000);
    assert.deepEqual(seen.map((e) => e.bytesDone), [0, 2, 3], 'an update past the interval is sent at once; nothing after the end');
  });
});

describe('pull flights: each caller\'s own timeout', () => {
  it('an attaching caller leaves at its own deadline; the pull goes on for the first', async () => {
    const rt = new FakeRuntime();
    const clock = new ManualClock();
    const { svc } = service(rt, { clock });
    const pa = svc.pull({ images: [IMG] }, () => undefined);
    const pull = await rt.takePull();
    const pb = svc.pull({ images: [IMG], timeoutMs: 50 }, () => undefined);
    await clock.advance(50);
    const [rb] = await pb;
    assert.equal(rb.errorKind, 'DeadlineExceeded');
    assert.match(rb.error, /did not finish within 50ms \(the request's timeout\)/);
    assert.equal(pull.opts.signal?.aborted, false);
    pull.finish();
    const [ra] = await pa;
    assert.equal(ra.phase, 'Done');
  });

  it('bounds the time queued for a node-wide slot', async () => {
    const rt = new FakeRuntime();
    const clock = new ManualClock();
    const { svc, registry } = service(rt, { clock, maxParallel: 1 });
    const px = svc.pull({ images: [IMG2] }, () => undefined);
    const running = await rt.takePull();
    const events: PullEvent[] = [];
    const pb = svc.pull({ images: [IMG], timeoutMs: 1000 }, (e) => events.push(e));
    await flush();
    assert.equal(lastOf(events).phase, 'Queued');
    await clock.advance(1000);
    const [rb] = await pb;
    assert.equal(rb.errorKind, 'DeadlineExceeded');
    assert.equal(await metric(registry, 'inplace_image_pull_queue_length'), 0, 'it left the queue');
    running.finish();
    await px;
    await flush();
    assert.equal(rt.pulls.length, 1, 'the image that timed out in the queue was never pulled');
  });
});

describe('pull flights: events', () => {
  it('a retry\'s Pulling event carries no error from the attempt before', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = (_ref, n) => (n < 2 ? new AgentError('Unavailable', 'connection reset') : {});
    const clock = new ManualClock();
    const { svc } = service(rt, { clock });
    const events: PullEvent[] = [];
    await clock.until(svc.pull({ images: [IMG] }, (e) => events.push(e)), 500);
    const second = events.find((e) => e.phase === 'Pulling' && e.attempt === 2);
    assert.ok(second);
    assert.equal(second.error, '');
    assert.equal(second.errorKind, '');
  });

  it('reports Pulling, not Queued, once a queued pull got its slot and checks the disk', async () => {
    const rt = new FakeRuntime();
    const { svc } = service(rt, { maxParallel: 1, minFreeDiskBytes: 1 });
    const events: PullEvent[] = [];
    const px = svc.pull({ images: [IMG2] }, () => undefined);
    const running = await rt.takePull();
    const pb = svc.pull({ images: [IMG] }, (e) => events.push(e));
    await flush();
    assert.equal(lastOf(events).phase, 'Queued');
    const release = rt.hold('imageFsUsage');
    running.finish();
    await px;
    await flush();
    assert.equal(lastOf(events).phase, 'Pulling');
    assert.equal(lastOf(events).queuePosition, 0);
    release();
    (await rt.takePull()).finish();
    await pb;
  });

  it('records no pull duration for a pull the disk guard refused', async () => {
    const rt = new FakeRuntime();
    rt.freeBytes = 1;
    const { svc, registry } = service(rt, { minFreeDiskBytes: 1024 });
    const [e] = await svc.pull({ images: [IMG] }, () => undefined);
    assert.equal(e.errorKind, 'ResourceExhausted');
    assert.equal(await metric(registry, 'inplace_image_pull_duration_seconds'), 0);
    assert.equal(await metric(registry, 'inplace_image_pulls_total', { result: 'failed' }), 1);
  });
});
