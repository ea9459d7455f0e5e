// A digest reference is verified against what the runtime stored, never against itself.
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { ImagePullService } from '../../src/pull/pull-service.js';
import { digestFor } from '../../src/runtime/cri/pull-image.js';
import { storedDigest } from '../../src/runtime/docker/pull.js';
import { FakeRuntime, ManualClock } from '../support/pull-fakes.js';

const A = 'sha256:' + 'a'.repeat(64);
const B = 'sha256:' + 'b'.repeat(64);
const REPO = '127.0.0.1:5000/inplace/app';

describe('pull digests: what the adapters report', () => {
  it('CRI: the repo digest stored for the repository, not the one asked for', () => {
    assert.equal(digestFor(`${REPO}@${A}`, [`${REPO}@${B}`]), `${REPO}@${B}`);
    assert.equal(digestFor(`${REPO}@${A}`, [`${REPO}@${B}`, `${REPO}@${A}`]), `${REPO}@${A}`, 'the requested one when stored');
    assert.equal(digestFor(`${REPO}@${A}`, [`127.0.0.1:5000/other/app@${A}`]), '', 'another repository does not count');
    assert.equal(digestFor(`${REPO}:v1`, [`127.0.0.1:5000/x${REPO.slice(14)}@${B}`, `${REPO}@${A}`]), `${REPO}@${A}`, 'not a suffix match');
    assert.equal(digestFor('busybox:1', [`docker.io/library/busybox@${A}`]), `docker.io/library/busybox@${A}`);
  });

  it('Docker: the stream\'s Digest line, else RepoDigests of the repository, never the request', () => {
    assert.equal(storedDigest(`${REPO}@${A}`, B, []), `${REPO}@${B}`);
    assert.equal(storedDigest(`${REPO}@${A}`, '', [`${REPO}@${B}`]), `${REPO}@${B}`);
    assert.equal(storedDigest(`${REPO}@${A}`, '', []), '');
    assert.equal(storedDigest(`${REPO}@${A}`, '', [`${REPO}@${B}`, `${REPO}@${A}`]), `${REPO}@${A}`);
    assert.equal(storedDigest('docker.io/library/busybox:1', '', [`busybox@${A}`]), `busybox@${A}`, 'Docker\'s short names match');
    assert.equal(storedDigest(`${REPO}:v1`, '', [`127.0.0.1:5000/other/app@${A}`]), '');
  });
});

describe('pull digests: verification in the service', () => {
  it('fails a digest reference when the runtime stored another digest', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = () => ({ digest: `${REPO}@${B}` });
    const svc = new ImagePullService({ runtime: rt.asRuntime(), metricsRegistry: new Registry(), retries: 0, clock: new ManualClock() });
    const [e] = await svc.pull({ images: [`${REPO}@${A}`] }, () => undefined);
    assert.equal(e.phase, 'Failed');
    assert.equal(e.errorKind, 'FailedPrecondition');
    assert.match(e.error, new RegExp(`stored ${REPO}@${B}, not ${A}`));
  });

  it('falls back to the stored image\'s repo digest when the runtime does not tell, and checks that', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = () => ({ digest: '' });
    const runtime = rt.asRuntime();
    const svc = new ImagePullService({
      runtime: {
        ...runtime,
        inspectImage: async () => (rt.pulls.length ? { id: 'sha256:' + 'c'.repeat(64), repoTags: [], repoDigests: [`${REPO}@${B}`], size: 1, pinned: false } : undefined),
      },
      metricsRegistry: new Registry(),
      retries: 0,
      clock: new ManualClock(),
    });
    const [e] = await svc.pull({ images: [`${REPO}@${A}`] }, () => undefined);
    assert.equal(e.errorKind, 'FailedPrecondition');
    const [t] = await svc.pull({ images: [`${REPO}:v9`] }, () => undefined);
    assert.equal(t.phase, 'Done');
    assert.equal(t.digest, `${REPO}@${B}`);
  });
});
