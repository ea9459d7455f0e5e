// The one rule from the API server's HTTP status to the agent's error kind (k8s/api-error.ts), as every API client
// of the agent and of inplacectl applies it.
import assert from 'node:assert/strict';
import { apiStatusCode, isConflict, isCredentialsRefused, isForbidden, kindOfStatus, kubeCall, kubeError, UNAUTHORIZED_NOTE, USER_UNAUTHORIZED_NOTE } from '../../src/k8s/api-error.js';
import { EXIT, exitStatusOf } from '../../src/cli/program.js';
import { AgentError } from '../../src/errors.js';

/** What @kubernetes/client-node throws for a failed call: the HTTP code and the Status body. */
function apiFailure(code: number, message: string): Error {
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code, body: JSON.stringify({ kind: 'Status', message }) });
}

describe('API server errors', () => {
  it('maps each status to one kind', () => {
    const rows: [number | undefined, string][] = [
      [undefined, 'Unavailable'],
      [400, 'InvalidArgument'],
      [401, 'Unavailable'],
      [403, 'FailedPrecondition'],
      [404, 'NotFound'],
      [409, 'Aborted'],
      [410, 'Aborted'],
      [422, 'InvalidArgument'],
      [429, 'Unavailable'],
      [500, 'Unavailable'],
      [503, 'Unavailable'],
      [418, 'Internal'],
    ];
    for (const [status, kind] of rows) assert.equal(kindOfStatus(status), kind, `status ${status}`);
  });

  it("maps a 401 for a user's client to Unauthenticated, and every other status as for the agent", () => {
    assert.equal(kindOfStatus(401, 'user'), 'Unauthenticated');
    assert.equal(kindOfStatus(401, 'agent'), 'Unavailable');
    for (const status of [undefined, 400, 403, 404, 409, 410, 422, 429, 500, 503, 418]) assert.equal(kindOfStatus(status, 'user'), kindOfStatus(status), `status ${status}`);
  });

  it("says a user's refused credentials are the kubeconfig's, and exits 3 for them (1 for the agent's 401)", async () => {
    const err = kubeError(apiFailure(401, 'Unauthorized'), 'ImagePrewarm web', 'user');
    assert.equal(err.kind, 'Unauthenticated');
    assert.equal(err.message, `ImagePrewarm web: Unauthorized (${USER_UNAUTHORIZED_NOTE})`);
    assert.match(err.message, /refused the kubeconfig's credentials/);
    assert.equal(apiStatusCode(err), 401);
    assert.equal(isCredentialsRefused(err), true);
    assert.equal(exitStatusOf(err), EXIT.credentials);
    assert.equal(EXIT.credentials, 3);
    await assert.rejects(kubeCall('list pods', () => Promise.reject(apiFailure(401, 'Unauthorized')), 'user'), (e: unknown) => AgentError.is(e, 'Unauthenticated'));
    const agents = kubeError(apiFailure(401, 'Unauthorized'), 'ImagePrewarm web');
    assert.equal(isCredentialsRefused(agents), false);
    assert.equal(exitStatusOf(agents), EXIT.failed);
    // A registry's refusal (Unauthenticated without the API server's 401) is the operation's failure, not the user's login.
    assert.equal(exitStatusOf(new AgentError('Unauthenticated', 'image "r/x:1": not authorized')), EXIT.failed);
  });

  it('maps the status code to a kind and keeps the server message', () => {
    const err = kubeError(apiFailure(404, 'pods "x" not found'), 'read pod');
    assert.equal(err.kind, 'NotFound');
    assert.equal(err.message, 'read pod: pods "x" not found');
  });

  it('waits out a 401 like an outage, saying why', () => {
    const err = kubeError(apiFailure(401, 'Unauthorized'), 'reading pod a/b');
    assert.equal(err.kind, 'Unavailable');
    assert.equal(err.message, `reading pod a/b: Unauthorized (${UNAUTHORIZED_NOTE})`);
    assert.equal(apiStatusCode(err), 401);
  });

  it('says an unreached API server is unreachable, and a Status-less answer by its code', () => {
    const down = kubeError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' }), 'list pods');
    assert.equal(down.kind, 'Unavailable');
    assert.equal(down.message, 'list pods: the API server cannot be reached: connect ECONNREFUSED 127.0.0.1:6443');
    assert.equal(apiStatusCode(down), undefined);
    const bare = kubeError(Object.assign(new Error('HTTP-Code: 502'), { code: 502 }), 'list pods');
    assert.equal(bare.message, 'list pods: HTTP 502');
    assert.equal(bare.kind, 'Unavailable');
  });

  it('keeps an AgentError as it is', () => {
    const e = new AgentError('Cancelled', 'stopped');
    assert.equal(kubeError(e, 'anything'), e);
  });

  it('kubeCall answers the call, or throws its kubeError', async () => {
    assert.equal(await kubeCall('x', () => Promise.resolve(7)), 7);
    await assert.rejects(
      kubeCall('create slot Lease n/s', () => Promise.reject(apiFailure(409, 'leases "s" already exists'))),
      (e: unknown) => AgentError.is(e, 'Aborted') && apiStatusCode(e) === 409 && e.message === 'create slot Lease n/s: leases "s" already exists',
    );
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
    assert.equal(isConflict(new Error('wrapped', { cause: apiFailure(409, 'conflict') })), true);
    assert.equal(isConflict(apiFailure(403, 'forbidden')), false);
  });
});
