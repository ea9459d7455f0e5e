import assert from 'node:assert/strict';
import { parseImageRef, sameImage } from '../../src/image-ref.js';
import { AgentError } from '../../src/errors.js';

describe('parseImageRef', () => {
  it('normalises Docker Hub short names', () => {
    const r = parseImageRef('busybox');
    assert.equal(r.normalized, 'docker.io/library/busybox:latest');
    assert.equal(r.registry, 'docker.io');
    assert.equal(r.tag, 'latest');
  });

  it('keeps a loopback registry with port, a path and a tag', () => {
    const r = parseImageRef('127.0.0.1:5000/inplace/app:v2');
    assert.equal(r.registry, '127.0.0.1:5000');
    assert.equal(r.repository, 'inplace/app');
    assert.equal(r.tag, 'v2');
    assert.equal(r.normalized, '127.0.0.1:5000/inplace/app:v2');
  });

  it('parses a digest reference without adding a tag', () => {
    const d = 'sha256:' + 'a'.repeat(64);
    const r = parseImageRef(`localhost:5000/app@${d}`);
    assert.equal(r.digest, d);
    assert.equal(r.tag, undefined);
    assert.equal(r.normalized, `localhost:5000/app@${d}`);
  });

  for (const bad of ['', 'app/UPPER', 'app:', 'app:bad tag', 'app@sha256:xyz', 'a//b', 'app@md5', '-app']) {
    it(`refuses ${JSON.stringify(bad)} with InvalidArgument naming it`, () => {
      assert.throws(
        () => parseImageRef(bad),
        (e: unknown) => e instanceof AgentError && e.kind === 'InvalidArgument' && e.message.includes(`"${bad}"`),
      );
    });
  }

  it('compares references after normalisation', () => {
    assert.ok(sameImage('busybox', 'docker.io/library/busybox:latest'));
    assert.ok(!sameImage('busybox:1', 'busybox:2'));
  });
});
