import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import { dockerError, dockerStatus } from '../../src/runtime/docker/errors.js';

const ENDPOINT = 'unix:///tmp/inplace-sandbox/docker.sock';

/** An error as docker-modem builds it for a non-2xx answer. */
function httpError(statusCode: number, message: string): Error {
  return Object.assign(new Error(`(HTTP code ${statusCode}) unexpected - ${message} `), { statusCode, reason: 'x', json: { message } });
}

describe('Docker errors to AgentError kinds', () => {
  const byStatus: [number, string][] = [
    [400, 'InvalidArgument'],
    [401, 'Unauthenticated'],
    [403, 'Unauthenticated'],
    [404, 'NotFound'],
    [409, 'FailedPrecondition'],
    [500, 'Internal'],
    [503, 'Unavailable'],
  ];
  for (const [status, kind] of byStatus) {
    it(`${status} is ${kind}, whatever the text says`, () => {
      assert.equal(dockerError(httpError(status, 'No such container: abc'), 'container "abc"', ENDPOINT).kind, kind);
    });
  }

  it('names the thing: "<subject> not found", else "<subject>: <daemon message>"', () => {
    const nf = dockerError(httpError(404, 'No such container: abc'), 'container "abc"', ENDPOINT);
    assert.equal(nf.message, 'container "abc" not found');
    const conflict = dockerError(
      httpError(409, 'Conflict. The container name "/web" is already in use by container "123".'),
      'create container "web"',
      ENDPOINT,
    );
    assert.equal(conflict.message, 'create container "web": Conflict. The container name "/web" is already in use by container "123".');
    assert.ok(conflict.cause instanceof Error);
  });

  it('reads the daemon text of streamed answers out of the modem message', () => {
    const streamed = Object.assign(new Error('(HTTP code 500) server error - Get "http://r/v2/": connection refused '), { statusCode: 500, json: null });
    assert.equal(dockerError(streamed, 'image "r/x"', ENDPOINT).message, 'image "r/x": Get "http://r/v2/": connection refused');
  });

  for (const code of ['ENOENT', 'ECONNREFUSED', 'EACCES']) {
    it(`${code} on connect is Unavailable naming the socket`, () => {
      const err = Object.assign(new Error(`connect ${code} /tmp/inplace-sandbox/docker.sock`), { code, syscall: 'connect' });
      const e = dockerError(err, 'version', ENDPOINT);
      assert.equal(e.kind, 'Unavailable');
      assert.equal(e.message, `Docker daemon at ${ENDPOINT} is unreachable (${code}) [version]`);
    });
  }

  it('keeps AgentErrors, cancels on abort, and reads status codes', () => {
    const own = new AgentError('DeadlineExceeded', 'x');
    assert.equal(dockerError(own, 's', ENDPOINT), own);
    const abort = Object.assign(new Error('The operation was aborted'), { name: 'AbortError' });
    assert.equal(dockerError(abort, 'image "x"', ENDPOINT).kind, 'Cancelled');
    assert.equal(dockerError(new Error('odd'), 's', ENDPOINT).kind, 'Internal');
    assert.equal(dockerStatus(httpError(304, '')), 304);
    assert.equal(dockerStatus(new Error('x')), undefined);
    assert.equal(dockerStatus(undefined), undefined);
  });
});
