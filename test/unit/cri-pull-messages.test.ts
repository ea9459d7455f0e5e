// The table of containerd's pull failure messages (src/runtime/cri/pull-messages.ts) and how a failed CRI
// PullImage becomes an AgentError through it. The integration test cri-pull-errors.test.ts checks the same
// rows against the real containerd 1.6 and 2.x.
import assert from 'node:assert/strict';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { isRetryable } from '../../src/pull/pull-errors.js';
import { fromGrpcError, pullKindOf } from '../../src/runtime/cri/errors.js';
import { matchPullMessage, PULL_MESSAGES } from '../../src/runtime/cri/pull-messages.js';

function serviceError(code: status, details: string): ServiceError {
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), { code, details, metadata: new Metadata() });
}

const pull = (code: status, details: string) =>
  fromGrpcError(serviceError(code, details), { op: 'PullImage', what: 'image "r/x:1"', endpoint: 'unix:///run/containerd/containerd.sock' });

describe('containerd pull messages (table)', () => {
  for (const row of PULL_MESSAGES) {
    it(`${row.id}: its captured message is ${row.kind}, by this row and no earlier one`, () => {
      assert.equal(matchPullMessage(row.seen)?.id, row.id);
      assert.equal(pull(status.UNKNOWN, row.seen).kind, row.kind);
      assert.equal(pull(status.NOT_FOUND, row.seen).kind, row.kind, 'the gRPC code does not override the message');
    });
  }

  it('names are unique and every row says which containerd sends it', () => {
    assert.equal(new Set(PULL_MESSAGES.map((m) => m.id)).size, PULL_MESSAGES.length);
    for (const m of PULL_MESSAGES) assert.ok(m.versions.length > 0, m.id);
  });

  it('2.x "pull access denied, repository does not exist or may require authorization" is Unauthenticated, not NotFound', () => {
    const e = pull(status.UNKNOWN, 'failed to resolve image: pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials');
    assert.equal(e.kind, 'Unauthenticated');
    assert.equal(isRetryable(e), false);
  });

  it('2.x "failed to resolve image: REF: not found" is NotFound and not retried', () => {
    const e = pull(status.NOT_FOUND, 'failed to pull and unpack image "r/x:1": failed to resolve image: r/x:1: not found');
    assert.equal(e.kind, 'NotFound');
    assert.equal(isRetryable(e), false);
  });

  it('an unknown message is Unknown and retryable, even when it says "not found" (containerd\'s own content store)', () => {
    for (const text of [
      'failed to pull and unpack image "r/x:1": failed to unpack image on snapshotter overlayfs: content digest sha256:' + 'a'.repeat(64) + ': not found',
      'failed to resolve reference "r/x:1": r/x:2: not found',
      'something new went wrong',
    ]) {
      for (const code of [status.UNKNOWN, status.NOT_FOUND, status.INTERNAL]) {
        const e = pull(code, text);
        assert.equal(e.kind, 'Unknown', `${status[code]} ${text}`);
        assert.equal(isRetryable(e), true);
      }
    }
  });

  it('a cancelled, timed-out or unreachable call keeps the transport\'s kind', () => {
    assert.equal(pullKindOf(status.CANCELLED, 'x: not found'), 'Cancelled');
    assert.equal(pullKindOf(status.DEADLINE_EXCEEDED, 'x'), 'DeadlineExceeded');
    assert.equal(pullKindOf(status.UNAVAILABLE, 'No connection established'), 'Unavailable');
  });
});
