import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { AgentError } from '../../src/errors.js';
import { classifyPullError, isRetryable } from '../../src/pull/pull-errors.js';
import { ImagePullService } from '../../src/pull/pull-service.js';
import { FakeRuntime } from '../support/pull-fakes.js';

const IMG = '127.0.0.1:5000/inplace/app:v1';

// Messages as the adapters pass them on (the CRI adapter wraps containerd's text in its own sentence).
const CRI_MISSING =
  'image "127.0.0.1:5000/inplace/app:nope" not found (PullImage: failed to pull and unpack image "127.0.0.1:5000/inplace/app:nope": ' +
  'failed to resolve reference "127.0.0.1:5000/inplace/app:nope": 127.0.0.1:5000/inplace/app:nope: not found)';
const CRI_CONTENT_GONE =
  'image "127.0.0.1:5000/inplace/app:v1" not found (PullImage: failed to pull and unpack image "127.0.0.1:5000/inplace/app:v1": ' +
  'failed to unpack image on snapshotter overlayfs: content digest sha256:' + 'a'.repeat(64) + ': not found)';
const CRI_DISK_FULL =
  'PullImage image "127.0.0.1:5000/inplace/app:v1": failed to pull and unpack image: failed to extract layer sha256:' + 'b'.repeat(64) +
  ': write /var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/12/fs/big: no space left on device: unknown';

describe('pull errors: what the registry said, what the node said', () => {
  it('reports a missing image only for the registry\'s wording', () => {
    for (const [kind, text] of [
      ['NotFound', CRI_MISSING],
      ['NotFound', 'manifest for 127.0.0.1:5000/inplace/app:nope not found: manifest unknown: manifest unknown'],
      ['Internal', 'repository 127.0.0.1:5000/none not found: name unknown: repository name not known to registry'],
      ['Unavailable', 'unexpected status from GET request to http://127.0.0.1:5000/v2/x/manifests/nope: 404 Not Found'],
    ] as const) {
      const e = classifyPullError(new AgentError(kind, text), 'x:nope', undefined, 'cri');
      assert.equal(e.kind, 'NotFound', text);
      assert.match(e.message, /image not found in its registry/);
      assert.equal(isRetryable(e), false);
    }
  });

  it('does not call containerd\'s own missing content a missing image, and lets a retry heal it', () => {
    const e = classifyPullError(new AgentError('NotFound', CRI_CONTENT_GONE), IMG, undefined, 'cri');
    assert.notEqual(e.kind, 'NotFound');
    assert.doesNotMatch(e.message, /not found in its registry/);
    assert.match(e.message, /content digest sha256:a+: not found/, 'the runtime\'s reason is kept');
    assert.equal(isRetryable(e), true);
  });

  it('takes Docker\'s HTTP 404 on a pull as a missing image (its adapter keeps only the status)', () => {
    const e = classifyPullError(new AgentError('NotFound', 'image "127.0.0.1:5000/inplace/app:nope" not found'), 'x:nope', undefined, 'docker');
    assert.equal(e.kind, 'NotFound');
    assert.match(e.message, /image not found in its registry/);
  });

  it('reports a full disk as ResourceExhausted, which is not retried', () => {
    for (const text of [CRI_DISK_FULL, 'write /var/lib/docker/tmp/x: ENOSPC', 'open /var/lib/containerd/x: disk quota exceeded']) {
      const e = classifyPullError(new AgentError('Internal', text), IMG);
      assert.equal(e.kind, 'ResourceExhausted', text);
      assert.match(e.message, /no space left on the image filesystem/);
      assert.equal(isRetryable(e), false);
    }
  });

  it('the service makes one attempt on a full disk', async () => {
    const rt = new FakeRuntime();
    rt.autoFinish = () => new AgentError('Internal', CRI_DISK_FULL);
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
