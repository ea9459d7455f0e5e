import assert from 'node:assert/strict';
import {
  argvFromDocker,
  containerFromInspect,
  containerFromSummary,
  containerState,
  dockerDate,
  envFromDocker,
  eventTime,
  eventType,
  imageFromDocker,
  joinLabels,
  splitLabels,
} from '../../src/runtime/docker/convert.js';
import { dockerodeOptions } from '../../src/runtime/docker/endpoint.js';
import { dockerAuth, splitReference } from '../../src/runtime/docker/pull.js';
import { AgentError } from '../../src/errors.js';
import type Dockerode from 'dockerode';
import { ANON_VOLUME, APP_ID, SANDBOX_ID, appInspect, summary } from '../support/docker-json.js';

describe('Docker JSON to domain types', () => {
  it('reads a running container from inspect: name, pod, image, times, labels, annotations, mounts', () => {
    const c = containerFromInspect(appInspect(), SANDBOX_ID);
    assert.equal(c.id, APP_ID);
    assert.equal(c.name, 'dk-a');
    assert.equal(c.runtimeName, 'dk-a');
    assert.equal(c.podId, SANDBOX_ID);
    assert.equal(c.attempt, 0);
    assert.equal(c.image, '127.0.0.1:5000/inplace/app:v1');
    assert.equal(c.imageId, 'sha256:8e6c889ef9afd119ff362b09dc7eaf6aa01838dc27d3b437d7555cc3199431c4');
    assert.equal(c.state, 'running');
    assert.equal(c.createdAt.toISOString(), '2026-11-29T16:13:59.795Z');
    assert.equal(c.startedAt?.toISOString(), '2026-11-29T16:13:59.909Z');
    assert.equal(c.finishedAt, undefined, 'the zero time means never');
    assert.equal(c.exitCode, undefined);
    assert.equal(c.reason, undefined);
    assert.deepEqual(c.labels, { 'org.opencontainers.image.title': 'inplace-app', 'org.opencontainers.image.version': 'v1', team: 'blue' });
    assert.deepEqual(c.annotations, { 'example.com/owner': 'ops' });
    assert.deepEqual(c.mounts, [
      { source: '/tmp/dk-shared', containerPath: '/shared', readonly: false, type: 'bind' },
      { source: ANON_VOLUME, containerPath: '/data', readonly: false, type: 'volume' },
      { source: '/etc/app', containerPath: '/config', readonly: true, type: 'bind' },
      { source: '', containerPath: '/scratch', readonly: false, type: 'tmpfs' },
    ]);
  });

  it('keeps the whole inspect JSON as the spec native config and reads argv, env and working dir', () => {
    const info = appInspect();
    const { spec } = containerFromInspect(info, SANDBOX_ID);
    assert.equal(spec.native, info);
    assert.equal(spec.name, 'dk-a');
    assert.equal(spec.image, '127.0.0.1:5000/inplace/app:v1');
    assert.deepEqual(spec.command, ['/app/run.sh']);
    assert.deepEqual(spec.args, [], 'Cmd null is no args');
    assert.deepEqual(spec.env.map((e) => e.key), ['PATH', 'APP_VERSION', 'MODE']);
    assert.equal(spec.workingDir, '/app');
    assert.equal(spec.attempt, 0);
  });

  it('takes the name in the pod from io.kubernetes.container.name, keeping the Docker name as runtimeName', () => {
    const info = appInspect();
    info.Config.Labels['io.kubernetes.container.name'] = 'app';
    const c = containerFromInspect(info, SANDBOX_ID);
    assert.equal(c.name, 'app');
    assert.equal(c.spec.name, 'app');
    assert.equal(c.runtimeName, 'dk-a');
  });

  it('reads exit code and a kubelet-style reason once a container exited', () => {
    const info = appInspect();
    Object.assign(info.State, { Status: 'exited', Running: false, ExitCode: 3, FinishedAt: '2026-11-29T16:20:00.5Z' });
    let c = containerFromInspect(info, SANDBOX_ID);
    assert.equal(c.state, 'exited');
    assert.equal(c.exitCode, 3);
    assert.equal(c.reason, 'Error');
    assert.equal(c.finishedAt?.toISOString(), '2026-11-29T16:20:00.500Z');
    info.State.ExitCode = 0;
    assert.equal(containerFromInspect(info, SANDBOX_ID).reason, 'Completed');
    info.State.OOMKilled = true;
    info.State.ExitCode = 137;
    c = containerFromInspect(info, SANDBOX_ID);
    assert.equal(c.reason, 'OOMKilled');
  });

  it('maps Docker states', () => {
    assert.deepEqual(
      ['created', 'running', 'paused', 'restarting', 'exited', 'dead', 'removing', 'weird', undefined].map(containerState),
      ['created', 'running', 'running', 'running', 'exited', 'exited', 'exited', 'unknown', 'unknown'],
    );
  });

  it('reads a list entry: no start time or exit code, created from seconds', () => {
    const c = containerFromSummary(
      summary(APP_ID, 'pod-app', `container:${SANDBOX_ID}`, { State: 'exited', Labels: { 'io.kubernetes.container.name': 'app' } }),
      SANDBOX_ID,
    );
    assert.equal(c.name, 'app');
    assert.equal(c.runtimeName, 'pod-app');
    assert.equal(c.state, 'exited');
    assert.equal(c.createdAt.getTime(), 1795968839_000);
    assert.equal(c.startedAt, undefined);
    assert.equal(c.exitCode, undefined);
  });

  it('parses dates, env and argv defensively', () => {
    assert.equal(dockerDate('0001-01-01T00:00:00Z'), undefined);
    assert.equal(dockerDate(''), undefined);
    assert.equal(dockerDate('not a date'), undefined);
    assert.deepEqual(envFromDocker(['A=1', 'B=x=y', 'C', 'D=']), [
      { key: 'A', value: '1' },
      { key: 'B', value: 'x=y' },
      { key: 'C', value: '' },
      { key: 'D', value: '' },
    ]);
    assert.deepEqual(envFromDocker(null), []);
    assert.deepEqual(argvFromDocker('/bin/sh'), ['/bin/sh']);
    assert.deepEqual(argvFromDocker(null), []);
  });

  it('stores annotations as annotation.* labels and reads them back', () => {
    const all = joinLabels({ a: '1' }, { 'example.com/x': 'y' });
    assert.deepEqual(all, { a: '1', 'annotation.example.com/x': 'y' });
    assert.deepEqual(splitLabels(all), { labels: { a: '1' }, annotations: { 'example.com/x': 'y' } });
    assert.deepEqual(splitLabels(null), { labels: {}, annotations: {} });
  });

  it('reads images without the <none> placeholders; Docker never pins', () => {
    const inspected = imageFromDocker({
      Id: 'sha256:abc',
      RepoTags: ['127.0.0.1:5000/inplace/app:v1'],
      RepoDigests: ['127.0.0.1:5000/inplace/app@sha256:def'],
      Size: 1980000,
    } as Dockerode.ImageInspectInfo);
    assert.deepEqual(inspected, {
      id: 'sha256:abc',
      repoTags: ['127.0.0.1:5000/inplace/app:v1'],
      repoDigests: ['127.0.0.1:5000/inplace/app@sha256:def'],
      size: 1980000,
      pinned: false,
    });
    const listed = imageFromDocker({ Id: 'sha256:1', RepoTags: ['<none>:<none>'], RepoDigests: ['<none>@<none>'], Size: 5 } as Dockerode.ImageInfo);
    assert.deepEqual(listed.repoTags, []);
    assert.deepEqual(listed.repoDigests, []);
  });

  it('maps container event actions and times', () => {
    assert.deepEqual(['create', 'start', 'die', 'destroy', 'kill', 'stop', undefined].map(eventType), [
      'created',
      'started',
      'stopped',
      'deleted',
      undefined,
      undefined,
      undefined,
    ]);
    // As JSON.parse reads it: timeNano is above 2^53, and milliseconds survive.
    assert.equal(eventTime(JSON.parse('{"timeNano":1795968603062684297,"time":1795968603}')).toISOString(), '2026-11-29T16:10:03.062Z');
    assert.equal(eventTime({ time: 1795968603 }).toISOString(), '2026-11-29T16:10:03.000Z');
  });
});

describe('Docker endpoint and pull parameters', () => {
  it('connects to unix sockets and tcp, never to what DOCKER_HOST says', () => {
    const unix = dockerodeOptions('unix:///tmp/inplace-sandbox/docker.sock');
    assert.equal(unix.socketPath, '/tmp/inplace-sandbox/docker.sock');
    assert.ok('host' in unix && unix.host === undefined, 'host is overridden, not left to DOCKER_HOST');
    assert.equal(dockerodeOptions('/var/run/docker.sock').socketPath, '/var/run/docker.sock');
    const tcp = dockerodeOptions('tcp://10.0.0.5:2375');
    assert.equal(tcp.host, '10.0.0.5');
    assert.equal(tcp.port, '2375');
    assert.equal(tcp.socketPath, undefined);
    assert.throws(() => dockerodeOptions('npipe:////./pipe/docker'), (e: unknown) => AgentError.is(e, 'InvalidArgument'));
    assert.throws(() => dockerodeOptions('docker.sock'), /Docker endpoint "docker.sock"/);
  });

  it('splits references into fromImage and tag or digest', () => {
    assert.deepEqual(splitReference('127.0.0.1:5000/inplace/app:v1'), { repository: '127.0.0.1:5000/inplace/app', tag: 'v1', byDigest: false });
    assert.deepEqual(splitReference('127.0.0.1:5000/inplace/app'), { repository: '127.0.0.1:5000/inplace/app', tag: 'latest', byDigest: false });
    assert.deepEqual(splitReference('busybox'), { repository: 'busybox', tag: 'latest', byDigest: false });
    assert.deepEqual(splitReference('r:5000/a@sha256:00ff'), { repository: 'r:5000/a', tag: 'sha256:00ff', byDigest: true });
  });

  it('sends registry credentials as Docker expects them, decoding a config.json auth', () => {
    assert.deepEqual(dockerAuth({ auth: Buffer.from('bob:s3:cret').toString('base64'), serverAddress: 'r:5000' }), {
      username: 'bob',
      password: 's3:cret',
      serveraddress: 'r:5000',
    });
    assert.deepEqual(dockerAuth({ username: 'u', password: 'p' }), { username: 'u', password: 'p' });
    assert.deepEqual(dockerAuth({ identityToken: 't' }), { identitytoken: 't' });
  });
});
