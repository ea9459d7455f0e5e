import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { ImagePullService } from '../../src/pull/pull-service.js';
import { FakeRuntime, ManualClock } from '../support/pull-fakes.js';

const IMG = '127.0.0.1:5000/inplace/app:v2';

/** The service over a fake whose store looks (inspectImage) are counted. */
function counted() {
  const rt = new FakeRuntime();
  rt.images.push({ id: 'sha256:' + 'a'.repeat(64), repoTags: [IMG], repoDigests: [], size: 1, pinned: false });
  const runtime = rt.asRuntime();
  let looks = 0;
  const inspect = runtime.inspectImage.bind(runtime);
  runtime.inspectImage = (ref) => {
    looks++;
    return inspect(ref);
  };
  const clock = new ManualClock();
  const svc = new ImagePullService({ runtime, clock, metricsRegistry: new Registry(), progressIntervalMs: 0 });
  return { svc, clock, looks: () => looks };
}

describe('ImagePullService.lookAhead', () => {
  it('an ensure within 1 s takes the look begun ahead of it: one look in the store, nothing pulled', async () => {
    const { svc, looks } = counted();
    svc.lookAhead(IMG);
    assert.equal(looks(), 1, 'the look begins at once');
    const got = await svc.ensure(IMG);
    assert.equal(got.pulled, false);
    assert.equal(looks(), 1, 'the ensure did not look again');
  });

  it('a look older than 1 s is not taken: the ensure looks again', async () => {
    const { svc, clock, looks } = counted();
    svc.lookAhead(IMG);
    await clock.advance(1001);
    await svc.ensure(IMG);
    assert.equal(looks(), 2);
  });

  it('a look is taken once: a second ensure looks for itself', async () => {
    const { svc, looks } = counted();
    svc.lookAhead(IMG);
    await svc.ensure(IMG);
    await svc.ensure(IMG);
    assert.equal(looks(), 2);
  });

  it('a malformed reference is left to the request to refuse: nothing is looked up', () => {
    const { svc, looks } = counted();
    svc.lookAhead('not a reference!');
    assert.equal(looks(), 0);
  });

  it('a second look-ahead of the same reference within 1 s keeps the first look: one look in the store', async () => {
    const { svc, looks } = counted();
    svc.lookAhead(IMG);
    svc.lookAhead(IMG);
    assert.equal(looks(), 1);
    await svc.ensure(IMG);
    assert.equal(looks(), 1);
  });

  it('present() tells what the look found without taking it from the ensure; undefined with no look under way', async () => {
    const { svc, clock, looks } = counted();
    assert.equal(svc.present(IMG), undefined);
    svc.lookAhead(IMG);
    svc.lookAhead('127.0.0.1:5000/inplace/app:absent');
    assert.equal(await svc.present(IMG), true);
    assert.equal(await svc.present('127.0.0.1:5000/inplace/app:absent'), false);
    const got = await svc.ensure(IMG);
    assert.equal(got.pulled, false);
    assert.equal(looks(), 2, 'one look each, shared by present() and the ensure');
    await clock.advance(1001);
    assert.equal(svc.present('127.0.0.1:5000/inplace/app:absent'), undefined, 'a look older than 1 s is not told');
  });
});
