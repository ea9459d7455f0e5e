import assert from 'node:assert/strict';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { AgentError } from '../../src/errors.js';
import { fromGrpcError, kindOf, startCutShort, type CallContext } from '../../src/runtime/cri/errors.js';

const ENDPOINT = 'unix:///run/containerd/containerd.sock';

function serviceError(code: status, details: string): ServiceError {
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), { code, details, metadata: new Metadata() });
}

function ctx(op: string, what: string): CallContext {
  return { op, what, endpoint: ENDPOINT };
}

describe('CRI gRPC status to AgentError kind', () => {
  const byCode: [status, string][] = [
    [status.NOT_FOUND, 'NotFound'],
    [status.INVALID_ARGUMENT, 'InvalidArgument'],
    [status.UNAVAILABLE, 'Unavailable'],
    [status.DEADLINE_EXCEEDED, 'DeadlineExceeded'],
    [status.FAILED_PRECONDITION, 'FailedPrecondition'],
    [status.UNAUTHENTICATED, 'Unauthenticated'],
    [status.PERMISSION_DENIED, 'Unauthenticated'],
    [status.RESOURCE_EXHAUSTED, 'ResourceExhausted'],
    [status.ABORTED, 'Aborted'],
    [status.CANCELLED, 'Cancelled'],
    [status.ALREADY_EXISTS, 'FailedPrecondition'],
    [status.UNIMPLEMENTED, 'FailedPrecondition'],
    [status.INTERNAL, 'Internal'],
  ];
  for (const [code, kind] of byCode) {
    it(`${status[code]} is ${kind}, whatever the text says`, () => {
      assert.equal(kindOf(code, 'something was not found'), kind);
    });
  }

  it('reads the text only for UNKNOWN: containerd "...: not found" is NotFound', () => {
    assert.equal(
      kindOf(status.UNKNOWN, 'failed to pull and unpack image "r/x:1": failed to resolve reference "r/x:1": r/x:1: not found'),
      'NotFound',
    );
  });

  it('UNKNOWN for a reserved container name (same attempt twice) is FailedPrecondition', () => {
    assert.equal(kindOf(status.UNKNOWN, 'failed to reserve container name "a_p_default_u_0": name "a_p_default_u_0" is reserved for "abc"'), 'FailedPrecondition');
  });

  it('UNKNOWN for starting an exited container is FailedPrecondition', () => {
    assert.equal(kindOf(status.UNKNOWN, 'failed to set starting state for container "abc": container is in CONTAINER_EXITED state'), 'FailedPrecondition');
  });

  it('UNKNOWN for an exec timeout is DeadlineExceeded', () => {
    assert.equal(kindOf(status.UNKNOWN, 'failed to exec in container: timeout 1s exceeded: context deadline exceeded'), 'DeadlineExceeded');
  });

  it('UNKNOWN for a registry refusing credentials is Unauthenticated', () => {
    assert.equal(kindOf(status.UNKNOWN, 'failed to resolve reference "r/x:1": pulling from host r failed with status code [manifests 1]: 401 Unauthorized'), 'Unauthenticated');
  });

  it('UNKNOWN exec of a missing binary ("no such file or directory") is not NotFound', () => {
    assert.equal(kindOf(status.UNKNOWN, 'OCI runtime exec failed: exec: "/nope": stat /nope: no such file or directory: unknown'), 'Internal');
  });

  it('UNKNOWN "server is not initialized yet" (containerd just restarted) is Unavailable', () => {
    assert.equal(kindOf(status.UNKNOWN, 'server is not initialized yet'), 'Unavailable');
  });

  it('UNKNOWN "ttrpc: closed" (containerd lost its shim mid-call) is Unavailable', () => {
    assert.equal(kindOf(status.UNKNOWN, 'failed to kill container "abc": ttrpc: closed: unknown'), 'Unavailable');
  });

  it('UNKNOWN for a start while another start is under way is Aborted', () => {
    assert.equal(kindOf(status.UNKNOWN, 'failed to set starting state for container "abc": container is already in starting state'), 'Aborted');
  });

  it('a StartError status of a cancelled start means the start was cut short; other start errors do not', () => {
    assert.equal(startCutShort('StartError', 'failed to create containerd task: failed to create shim task: context canceled: unknown'), true);
    assert.equal(startCutShort('StartError', 'failed to create containerd task: exec: "/nope": stat /nope: no such file or directory: unknown'), false);
    assert.equal(startCutShort('Completed', 'context canceled'), false);
  });

  it('any other UNKNOWN is Internal', () => {
    assert.equal(kindOf(status.UNKNOWN, 'something broke'), 'Internal');
  });
});

describe('CRI errors name the thing', () => {
  it('NotFound starts with the thing', () => {
    const e = fromGrpcError(serviceError(status.NOT_FOUND, 'an error occurred when try to find container "abc123": not found'), ctx('ContainerStatus', 'container "abc123"'));
    assert.ok(e instanceof AgentError);
    assert.equal(e.kind, 'NotFound');
    assert.match(e.message, /^container "abc123" not found/);
  });

  it('Unavailable names the endpoint', () => {
    const e = fromGrpcError(serviceError(status.UNAVAILABLE, 'No connection established'), ctx('Version', ''));
    assert.equal(e.kind, 'Unavailable');
    assert.match(e.message, /CRI runtime at unix:\/\/\/run\/containerd\/containerd\.sock is unavailable/);
  });

  it('other kinds carry the operation, the thing and the runtime text', () => {
    const e = fromGrpcError(serviceError(status.INVALID_ARGUMENT, 'bad config'), ctx('CreateContainer', 'container "app" (attempt 1) in pod "p1"'));
    assert.equal(e.kind, 'InvalidArgument');
    assert.equal(e.message, 'CreateContainer container "app" (attempt 1) in pod "p1": bad config');
  });

  it('keeps the gRPC error as cause', () => {
    const cause = serviceError(status.INTERNAL, 'x');
    assert.equal(fromGrpcError(cause, ctx('ListContainers', '')).cause, cause);
  });

  it('leaves an AgentError as it is', () => {
    const e = new AgentError('Aborted', 'x');
    assert.equal(fromGrpcError(e, ctx('ListContainers', '')), e);
  });
});
