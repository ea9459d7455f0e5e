// The mapping of the API server's failures into the agent's errors (kube/api-error.ts).
import assert from 'node:assert/strict';
import { callerError, isConflict, isForbidden, kubeError } from '../../src/kube/api-error.js';

/** What @kubernetes/client-node throws for a failed call: the HTTP code and the Status body. */
function apiFailure(code: number, message: string): Error {
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code, body: JSON.stringify({ kind: 'Status', message }) });
}

describe('API server errors', () => {
  it('maps the status code to a kind and keeps the server message', () => {
    const err = kubeError(apiFailure(404, 'pods "x" not found'), 'read pod');
    assert.equal(err.kind, 'NotFound');
    assert.equal(err.message, 'read pod: pods "x" not found');
  });

  it('tells a 403 apart, raw or already mapped, and nothing else', () => {
    const raw = apiFailure(403, 'nodeprewarms is forbidden');
    assert.equal(isForbidden(raw), true);
    assert.equal(isForbidden(kubeError(raw, 'list nodeprewarms')), true);
    assert.equal(isForbidden(apiFailure(404, 'gone')), false);
    assert.equal(isForbidden(kubeError(apiFailure(409, 'conflict'), 'update')), false);
    assert.equal(isForbidden(new Error('socket hang up')), false);
  });

  it('tells a 409 apart through a wrapping error', () => {
    assert.equal(isConflict(kubeError(apiFailure(409, 'the object has been modified'), 'update')), true);
    assert.equal(isConflict(apiFailure(403, 'forbidden')), false);
  });

  it("a 401 to the agent's own call is waited out (Unavailable), a user's 401 is shown (Unauthenticated); other codes alike", () => {
    const raw = apiFailure(401, 'Unauthorized');
    const own = callerError(raw, 'list pods in shop', 'agent');
    assert.equal(own.kind, 'Unavailable');
    assert.match(own.message, /^list pods in shop: Unauthorized \(the API server does not accept this agent's credentials now/);
    assert.equal(callerError(raw, 'list pods in shop', 'user').kind, 'Unauthenticated');
    assert.equal(callerError(apiFailure(403, 'forbidden'), 'list pods', 'agent').kind, 'FailedPrecondition');
    assert.equal(isForbidden(callerError(apiFailure(403, 'forbidden'), 'list pods', 'agent')), true);
  });
});
