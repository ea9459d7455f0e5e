import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import { candidates, detectRuntime, type RuntimeFactories } from '../../src/runtime/detect.js';
import type { Runtime } from '../../src/runtime/runtime.js';

/** A stand-in runtime whose version() answers or fails: only what detection calls. */
function fakeRuntime(kind: 'cri' | 'docker', endpoint: string, up: Set<string>, closed: string[]): Runtime {
  return {
    kind,
    version: async () => {
      if (!up.has(endpoint)) throw new AgentError('Unavailable', `cannot connect to ${endpoint}`);
      return { kind, name: kind, version: '1', apiVersion: '1', endpoint };
    },
    close: () => closed.push(endpoint),
  } as unknown as Runtime;
}

describe('runtime detection', () => {
  const factories = (up: Set<string>, closed: string[] = []): RuntimeFactories => ({
    cri: (e) => fakeRuntime('cri', e, up, closed),
    docker: (e) => fakeRuntime('docker', e, up, closed),
  });

  it('tries containerd, CRI-O, cri-dockerd, then Docker', () => {
    assert.deepEqual(
      candidates({ runtime: 'auto' }).map((c) => c.endpoint),
      ['unix:///run/containerd/containerd.sock', 'unix:///var/run/crio/crio.sock', 'unix:///var/run/cri-dockerd.sock', 'unix:///var/run/docker.sock'],
    );
  });

  it('picks the first existing socket that answers, skipping one that exists but is down', async () => {
    const closed: string[] = [];
    const up = new Set(['unix:///var/run/crio/crio.sock', 'unix:///var/run/docker.sock']);
    const rt = await detectRuntime({ runtime: 'auto' }, factories(up, closed), () => true);
    assert.equal(rt.kind, 'cri');
    assert.equal((await rt.version()).endpoint, 'unix:///var/run/crio/crio.sock');
    assert.deepEqual(closed, ['unix:///run/containerd/containerd.sock']);
  });

  it('falls back to Docker when no CRI socket exists', async () => {
    const rt = await detectRuntime({ runtime: 'auto' }, factories(new Set(['unix:///var/run/docker.sock'])), (p) => p.includes('docker.sock'));
    assert.equal(rt.kind, 'docker');
  });

  it('fails fast naming every socket it tried', async () => {
    await assert.rejects(
      detectRuntime({ runtime: 'auto' }, factories(new Set()), () => false),
      (e: unknown) =>
        e instanceof AgentError &&
        e.kind === 'Unavailable' &&
        e.message.includes('/run/containerd/containerd.sock') &&
        e.message.includes('/var/run/crio/crio.sock') &&
        e.message.includes('/var/run/docker.sock'),
    );
  });

  it('uses an explicit endpoint only', async () => {
    await assert.rejects(
      detectRuntime({ runtime: 'docker', dockerHost: 'unix:///nowhere.sock' }, factories(new Set())),
      /unix:\/\/\/nowhere\.sock/,
    );
  });
});
