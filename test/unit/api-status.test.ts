import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { AgentError } from '../../src/errors.js';
import { fromServiceError, toServiceError } from '../../src/api/status.js';

describe('error <-> gRPC status mapping', () => {
  it('round-trips every kind through its gRPC code', () => {
    for (const kind of ['NotFound', 'InvalidArgument', 'FailedPrecondition', 'Unavailable', 'DeadlineExceeded', 'Aborted', 'ResourceExhausted', 'Unauthenticated', 'Internal'] as const) {
      const back = fromServiceError(toServiceError(new AgentError(kind, `it is ${kind}`)), 'unix:///x.sock');
      assert.equal(back.kind, kind);
      assert.equal(back.message, `it is ${kind}`);
    }
    assert.equal(toServiceError(new AgentError('NotFound', 'x')).code, grpc.status.NOT_FOUND);
    assert.equal(toServiceError(new AgentError('FailedPrecondition', 'x')).code, grpc.status.FAILED_PRECONDITION);
  });

  it("keeps the agent's own Unavailable (its runtime is down) apart from not reaching the agent", () => {
    const fromAgent = fromServiceError(toServiceError(new AgentError('Unavailable', 'cannot connect to docker at unix:///var/run/docker.sock: ECONNREFUSED')), 'unix:///a.sock');
    assert.match(fromAgent.message, /cannot connect to docker/);
    const transport = Object.assign(new Error('14 UNAVAILABLE: No connection established'), {
      code: grpc.status.UNAVAILABLE,
      details: 'No connection established. Last error: connect ENOENT /a.sock',
      metadata: new grpc.Metadata(),
    });
    const notReached = fromServiceError(transport, 'unix:///a.sock');
    assert.equal(notReached.kind, 'Unavailable');
    assert.match(notReached.message, /cannot reach the agent at unix:\/\/\/a\.sock \(no such socket\)/);
  });
});
