// Which ContainerRestarts a node's agent takes: the pod must be this node's (controllers/container-restart/pod-here.ts).
import assert from 'node:assert/strict';
import { podIsHere } from '../../src/controllers/container-restart/pod-here.js';
import type { Pod } from '../../src/runtime/types.js';

function sandbox(name: string, state: Pod['state'], labels: Record<string, string> = {}): Pod {
  const [namespace, podName] = name.split('/');
  return { id: `id-${podName}-${state}`, name, namespace, uid: labels['io.kubernetes.pod.uid'] ?? '', attempt: 0, state, ip: '', createdAt: new Date(0), labels, annotations: {} };
}

describe('the pod of a ContainerRestart is this node\'s', () => {
  it('when the API server schedules it here, whatever the runtime shows', () => {
    assert.equal(podIsHere(true, [], 'ns', 'web-3'), true);
  });

  it('when the runtime runs it as a standalone pod (no kubelet labels, sandbox ready)', () => {
    assert.equal(podIsHere(false, [sandbox('ns/web-3', 'ready')], 'ns', 'web-3'), true);
    assert.equal(podIsHere(false, [sandbox('ns/web-3', 'ready')], 'ns', 'web-4'), false);
  });

  it('not for a kubelet sandbox left here by an earlier pod of that name, stopped or still ready', () => {
    const kubelet = { 'io.kubernetes.pod.uid': 'old-uid', 'io.kubernetes.pod.name': 'web-3', 'io.kubernetes.pod.namespace': 'ns' };
    assert.equal(podIsHere(false, [sandbox('ns/web-3', 'notready', kubelet)], 'ns', 'web-3'), false);
    assert.equal(podIsHere(false, [sandbox('ns/web-3', 'ready', kubelet)], 'ns', 'web-3'), false);
  });

  it('not for a stopped standalone sandbox', () => {
    assert.equal(podIsHere(false, [sandbox('ns/web-3', 'notready')], 'ns', 'web-3'), false);
  });
});
