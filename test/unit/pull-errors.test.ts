import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Metadata, status } from '@grpc/grpc-js';
import { AgentError } from '../../src/errors.js';
import { classifyPullError, isRetryable } from '../../src/pull/pull-errors.js';
import { pullFailureCause } from '../../src/engine/image-puller.js';
import { ImagePullService } from '../../src/pull/pull-service.js';
import { fromGrpcError } from '../../src/runtime/cri/errors.js';
import { dockerPullError } from '../../src/runtime/docker/pull-errors.js';
import { FakeRuntime } from '../support/pull-fakes.js';

const IMG = '127.0.0.1:5000/inplace/app:v1';

// A CRI pull failure as the adapter passes it on: kind from containerd's message table, its text wrapped.
const criPull = (code: status, details: string) =>
  fromGrpcError(Object.assign(new Error(details), { code, details, metadata: new Metadata() }), { op: 'PullImage', what: `image "${IMG}"`, endpoint: 'unix:///c.sock' });

const CRI_MISSING_2 = 'failed to pull and unpack image "127.0.0.1:5000/inplace/app:nope": failed to resolve image: 127.0.0.1:5000/inplace/app:nope: not found';
const CRI_CONTENT_GONE =
  'failed to pull and unpack image "127.0.0.1:5000/inplace/app:v1": failed to unpack image on snapshotter overlayfs: content digest sha256:' + 'a'.repeat(64) + ': not found';
const CRI_DISK_FULL =
  'failed to pull and unpack image: failed to extract layer sha256:' + 'b'.repeat(64) +
  ': write /var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/12/fs/big: no space left on device: unknown';

describe('pull errors: what the registry said, what the node said', () => {
  it('on CRI, takes the adapter\'s kind: a missing image (containerd 2.x wording) is NotFound, not retried', () => {
    const e = classifyPullError(criPull(status.NOT_FOUND, CRI_MISSING_2), IMG);
    assert.equal(e.kind, 'NotFound');
    assert.match(e.message, /image not found in its registry/);
    assert.equal(isRetryable(e), false);
  });

  it('on CRI, does not call containerd\'s own missing content a missing image: Unknown, and a retry may heal it', () => {
    const e = classifyPullError(criPull(status.NOT_FOUND, CRI_CONTENT_GONE), IMG);
    assert.equal(e.kind, 'Unknown');
    assert.doesNotMatch(e.message, /not found in its registry/);
    assert.match(e.message, /content digest sha256:a+: not found/, 'the runtime\'s reason is kept');
    assert.equal(isRetryable(e), true);
  });

  it('on CRI, never guesses from stray words: an Unknown answer saying "manifest unknown" or "404" stays Unknown', () => {
    for (const text of ['manifest unknown: manifest unknown', 'unexpected status: 404 Not Found']) {
      assert.equal(classifyPullError(new AgentError('Unknown', text), IMG).kind, 'Unknown', text);
    }
  });

  it('on Docker, reports a missing image from dockerd\'s wording', () => {
    for (const [kind, text] of [
      ['Internal', 'manifest for 127.0.0.1:5000/inplace/app:nope not found: manifest unknown: manifest unknown'],
      ['Internal', 'repository 127.0.0.1:5000/none not found: name unknown: repository name not known to registry'],
    ] as const) {
      const e = classifyPullError(dockerPullError(new AgentError(kind, text)), 'x:nope');
      assert.equal(e.kind, 'NotFound', text);
      assert.match(e.message, /image not found in its registry/);
      assert.equal(isRetryable(e), false);
    }
  });

  it('takes Docker\'s HTTP 404 on a pull as a missing image (its adapter keeps only the status)', () => {
    const e = classifyPullError(dockerPullError(new AgentError('NotFound', 'image "127.0.0.1:5000/inplace/app:nope" not found')), 'x:nope');
    assert.equal(e.kind, 'NotFound');
    assert.match(e.message, /image not found in its registry/);
  });

  it('reports a full disk as ResourceExhausted, which is not retried', () => {
    const cases: AgentError[] = [
      criPull(status.UNKNOWN, CRI_DISK_FULL),
      dockerPullError(new AgentError('Internal', 'write /var/lib/docker/tmp/x: ENOSPC')),
      dockerPullError(new AgentError('Internal', 'open /var/lib/docker/x: disk quota exceeded')),
    ];
    for (const err of cases) {
      const text = err.message;
      const e = classifyPullError(err, IMG);
      assert.equal(e.kind, 'ResourceExhausted', text);
      assert.match(e.message, /no space left on the image filesystem/);
      assert.equal(isRetryable(e), false);
    }
  });

  it('the service makes one attempt on a full disk', async () => {
    const rt = new FakeRuntime('cri');
    rt.autoFinish = () => criPull(status.UNKNOWN, CRI_DISK_FULL);
    const svc = new ImagePullService({ runtime: rt.asRuntime(), retries: 3, backoff: { initialMs: 1, maxMs: 2, jitter: 0 }, metricsRegistry: new Registry() });
    const [e] = await svc.pull({ images: [IMG] }, () => undefined);
    assert.equal(e.errorKind, 'ResourceExhausted');
    assert.equal(rt.pulls.length, 1);
  });

  it('names no user when the registry refuses the credentials', () => {
    const e = classifyPullError(new AgentError('Unauthenticated', 'pull access denied'), IMG, { username: 'alice', password: 'wrong-pw' });
    assert.equal(e.kind, 'Unauthenticated');
    assert.match(e.message, /rejected the credentials given for it/);
    assert.doesNotMatch(e.message, /alice|wrong-pw/);
  });
});

describe('pull errors in a restart: the cause in a few words', () => {
  it('names what went wrong without repeating the image', () => {
    const image = '127.0.0.1:5000/inplace/app:v9';
    const nf = classifyPullError(new AgentError('NotFound', `image "${image}" not found (PullImage: failed to resolve reference "${image}": ${image}: not found)`), image);
    assert.equal(pullFailureCause(nf, image), 'not found in its registry');
    const auth = classifyPullError(new AgentError('Unauthenticated', `pulling ${image}: 401 Unauthorized`), image);
    assert.equal(pullFailureCause(auth, image), 'the registry requires credentials and none were given for it');
    const other = new AgentError('DeadlineExceeded', `pull of ${image} stalled: no new bytes for 60 s (stall timeout 60 s)`);
    assert.equal(pullFailureCause(other, image), 'stalled: no new bytes for 60 s (stall timeout 60 s)');
  });
});
