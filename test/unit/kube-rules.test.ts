import assert from 'node:assert/strict';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { kubeletRefusal } from '../../src/kube/restart-policy.js';
import { conditionPatch, READY_CONDITION } from '../../src/kube/ready-condition.js';
import { bareId, goDurationMs, observe } from '../../src/kube/container-status.js';
import { checkPreStop, resolvePort } from '../../src/kube/pre-stop.js';

const pod = (restartPolicy: string | undefined, containers: V1Container[], initContainers?: V1Container[]): V1Pod => ({
  metadata: { namespace: 'shop', name: 'web', uid: 'u1', generation: 3 },
  spec: { restartPolicy, containers, initContainers },
});

describe('kube: which restarts the kubelet brings back', () => {
  it('refuses restartPolicy Never for same and new images, saying which pod', () => {
    const p = pod('Never', [{ name: 'app', image: 'a:1' }]);
    assert.match(kubeletRefusal(p, 'app', true) ?? '', /pod shop\/web has restartPolicy Never/);
    assert.match(kubeletRefusal(p, 'app', false) ?? '', /restartPolicy Never/);
  });

  it('refuses OnFailure only for a same-image restart (an exit 0 would not be restarted)', () => {
    const p = pod('OnFailure', [{ name: 'app', image: 'a:1' }]);
    assert.match(kubeletRefusal(p, 'app', true) ?? '', /exits with code 0/);
    assert.equal(kubeletRefusal(p, 'app', false), undefined);
  });

  it('accepts Always, and the default (no policy)', () => {
    assert.equal(kubeletRefusal(pod('Always', [{ name: 'app' }]), 'app', true), undefined);
    assert.equal(kubeletRefusal(pod(undefined, [{ name: 'app' }]), 'app', true), undefined);
  });

  it("reads the container's own restartPolicy before the pod's", () => {
    assert.equal(kubeletRefusal(pod('Never', [{ name: 'app', restartPolicy: 'Always' }]), 'app', true), undefined);
    assert.match(kubeletRefusal(pod('Always', [{ name: 'app', restartPolicy: 'Never' }]), 'app', true) ?? '', /container "app" has restartPolicy Never/);
  });

  it('applies restartPolicyRules by exit code, first match wins', () => {
    const rules = [{ action: 'Restart', exitCodes: { operator: 'In', values: [0] } }];
    assert.equal(kubeletRefusal(pod('Never', [{ name: 'app', restartPolicy: 'OnFailure', restartPolicyRules: rules }]), 'app', true), undefined);
    const onlyZero = [{ action: 'Restart', exitCodes: { operator: 'In', values: [0] } }];
    assert.match(kubeletRefusal(pod('Always', [{ name: 'app', restartPolicy: 'Never', restartPolicyRules: onlyZero }]), 'app', true) ?? '', /code 143 or 137/);
  });

  it('treats init containers with restartPolicy Always as sidecars, whatever the pod policy', () => {
    const p = pod('Never', [{ name: 'app' }], [{ name: 'proxy', restartPolicy: 'Always' }, { name: 'setup' }]);
    assert.equal(kubeletRefusal(p, 'proxy', true), undefined);
    assert.match(kubeletRefusal(p, 'setup', true) ?? '', /init container/);
    assert.match(kubeletRefusal(p, 'nope', true) ?? '', /not in the spec/);
  });
});

describe('kube: the ready condition patch', () => {
  const now = new Date('2026-01-01T00:00:10Z');
  it('touches only its own condition, with observedGeneration and a new lastTransitionTime', () => {
    const p = pod('Always', [{ name: 'app' }]);
    const patch = conditionPatch(p, { status: 'False', reason: 'Draining', message: 'm' }, now) as { status: { conditions: Record<string, unknown>[] } };
    assert.deepEqual(patch, {
      status: { conditions: [{ type: READY_CONDITION, status: 'False', reason: 'Draining', message: 'm', lastTransitionTime: '2026-01-01T00:00:10Z', observedGeneration: 3 }] },
    });
  });

  it('keeps lastTransitionTime when only the reason changes; nothing to write when nothing changes', () => {
    const p = pod('Always', [{ name: 'app' }]);
    p.status = { conditions: [{ type: READY_CONDITION, status: 'False', reason: 'Draining', message: 'm', lastTransitionTime: new Date('2025-12-31T00:00:00Z'), observedGeneration: 3 }] };
    const patch = conditionPatch(p, { status: 'False', reason: 'Restarting', message: 'r' }, now) as { status: { conditions: { lastTransitionTime: string }[] } };
    assert.equal(patch.status.conditions[0].lastTransitionTime, '2025-12-31T00:00:00Z');
    assert.equal(conditionPatch(p, { status: 'False', reason: 'Draining', message: 'm' }, now), undefined);
    const flipped = conditionPatch(p, { status: 'True', reason: 'Restarted', message: 'x' }, now) as { status: { conditions: { lastTransitionTime: string }[] } };
    assert.equal(flipped.status.conditions[0].lastTransitionTime, '2026-01-01T00:00:10Z');
  });
});

describe('kube: reading a container status against the replaced instance', () => {
  const at = new Date('2026-01-01T00:00:00Z');
  it('sees the old instance, then the new one running', () => {
    assert.equal(observe({ name: 'app', image: 'a', imageID: '', ready: true, restartCount: 0, containerID: 'containerd://old', state: { running: { startedAt: at } } }, 'old').kind, 'old');
    const o = observe({ name: 'app', image: 'a', imageID: '', ready: false, restartCount: 1, containerID: 'containerd://new', state: { running: { startedAt: at } } }, 'old');
    assert.deepEqual(o, { kind: 'running', id: 'new', startedAt: at, ready: false, restartCount: 1 });
  });

  it("reports the kubelet's back-off after the old instance's exit with the next start time", () => {
    const o = observe(
      {
        name: 'app', image: 'a', imageID: '', ready: false, restartCount: 1, containerID: 'containerd://old',
        state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 1m20s restarting failed container=app pod=web_shop(u1)' } },
        lastState: { terminated: { exitCode: 0, containerID: 'containerd://old', finishedAt: at } },
      },
      'old',
    );
    assert.equal(o.kind, 'backoff');
    assert.equal(o.kind === 'backoff' && o.until?.toISOString(), '2026-01-01T00:01:20.000Z');
  });

  it('reports a new instance that exited as crashed, with its exit code', () => {
    const o = observe(
      {
        name: 'app', image: 'a', imageID: '', ready: false, restartCount: 2, containerID: 'containerd://n2',
        state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed' } },
        lastState: { terminated: { exitCode: 3, containerID: 'containerd://n2', finishedAt: at } },
      },
      'old',
    );
    assert.equal(o.kind, 'crashed');
    assert.equal(o.kind === 'crashed' && o.exitCode, 3);
    assert.equal(observe({ name: 'app', image: 'a', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ErrImagePull', message: 'not found' } } }, 'old').kind, 'error');
  });

  it('parses ids and Go durations', () => {
    assert.equal(bareId('containerd://abc'), 'abc');
    assert.equal(goDurationMs('5m0s'), 300_000);
    assert.equal(goDurationMs('300ms'), 300);
    assert.equal(goDurationMs('soon'), undefined);
  });
});

describe('kube: preStop checks', () => {
  it('resolves named ports and refuses unknown ones before anything is touched', () => {
    const c: V1Container = { name: 'app', ports: [{ name: 'http', containerPort: 8080 }], lifecycle: { preStop: { httpGet: { port: 'admin', path: '/quit' } } } };
    assert.equal(resolvePort(c, 'http'), 8080);
    assert.equal(resolvePort(c, 81), 81);
    assert.throws(() => checkPreStop(c), /names port "admin"/);
  });
});
