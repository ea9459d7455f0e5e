import assert from 'node:assert/strict';
import type { CoreV1Event, V1EndpointSlice, V1Pod } from '@kubernetes/client-node';
import { AgentError } from '../../src/errors.js';
import type { KubeApi } from '../../src/k8s/kube-api.js';
import { PodEvents } from '../../src/kube/pod-events.js';
import { silentLogger } from '../../src/log.js';
import { ManualClock } from '../support/manual-timers.js';

/** Serves a scripted sequence of EndpointSlice lists (the last one repeats) and records events. */
class ScriptedApi implements Partial<KubeApi> {
  lists = 0;
  created: CoreV1Event[] = [];
  patched: { name: string; patch: { count: number; lastTimestamp: string } }[] = [];
  gone = new Set<string>();
  constructor(private readonly script: V1EndpointSlice[][] = []) {}
  listEndpointSlices(): Promise<V1EndpointSlice[]> {
    const i = Math.min(this.lists++, this.script.length - 1);
    return Promise.resolve(this.script[i]);
  }
  createEvent(_ns: string, e: CoreV1Event): Promise<void> {
    this.created.push(e);
    return Promise.resolve();
  }
  patchEvent(_ns: string, name: string, patch: { count: number; lastTimestamp: string }): Promise<void> {
    if (this.gone.has(name)) return Promise.reject(new AgentError('NotFound', 'expired'));
    this.patched.push({ name, patch });
    return Promise.resolve();
  }
}

describe('kube: pod events', () => {
  const pod: V1Pod = { metadata: { namespace: 'shop', name: 'web', uid: 'u1' } };

  it('folds a repeated event into one, with count and lastTimestamp, and names the container', async () => {
    const clock = new ManualClock({ sleepsAdvance: true });
    const api = new ScriptedApi();
    const ev = new PodEvents(api as unknown as KubeApi, 'node1', clock, silentLogger());
    await ev.record(pod, 'app', 'Warning', 'BackOff', 'Back-off restarting container app');
    await clock.advance(1000);
    await ev.record(pod, 'app', 'Warning', 'BackOff', 'Back-off restarting container app');
    await ev.record(pod, 'app', 'Normal', 'Killing', 'Stopping container app');
    assert.equal(api.created.length, 2);
    assert.equal(api.created[0].involvedObject.fieldPath, 'spec.containers{app}');
    assert.equal(api.created[0].source?.component, 'inplace-agent');
    assert.equal(api.patched.length, 1);
    assert.equal(api.patched[0].name, api.created[0].metadata?.name);
    assert.equal(api.patched[0].patch.count, 2);
    assert.equal(api.patched[0].patch.lastTimestamp, new Date(clock.now()).toISOString());
  });

  it('creates the event again when the folded one has expired', async () => {
    const api = new ScriptedApi();
    const ev = new PodEvents(api as unknown as KubeApi, 'node1', new ManualClock({ sleepsAdvance: true }), silentLogger());
    await ev.record(pod, 'app', 'Normal', 'Pulled', 'x');
    api.gone.add(api.created[0].metadata!.name!);
    await ev.record(pod, 'app', 'Normal', 'Pulled', 'x');
    assert.equal(api.created.length, 2);
  });

  it('writes the events of a pod in the order they were recorded, though nobody waits for the first', async () => {
    const api = new ScriptedApi();
    let release: () => void = () => undefined;
    const slow = new Promise<void>((r) => (release = r));
    const create = api.createEvent.bind(api);
    api.createEvent = async (ns, e) => {
      if (e.reason === 'Draining') await slow; // the first write is slow to answer
      return create(ns, e);
    };
    const ev = new PodEvents(api as unknown as KubeApi, 'node1', new ManualClock({ sleepsAdvance: true }), silentLogger());
    void ev.record(pod, 'app', 'Normal', 'Draining', 'd');
    const killing = ev.record(pod, 'app', 'Normal', 'Killing', 'k');
    await new Promise((r) => setImmediate(r));
    assert.equal(api.created.length, 0, 'the second waits for the first');
    release();
    await killing;
    assert.deepEqual(api.created.map((e) => e.reason), ['Draining', 'Killing']);
  });
});
