// holdsReport: what the agent says is active and off on a cluster, from what it read there (the version, whether
// MutatingAdmissionPolicy v1 is served, which shipped policies are installed).
import assert from 'node:assert/strict';
import { holdsReport, SHIPPED_POLICIES, type ShippedPolicy } from '../../src/k8s/cluster-holds.js';

const ALL = Object.keys(SHIPPED_POLICIES) as ShippedPolicy[];

describe('holdsReport', () => {
  it('every shipped policy installed: five active, nothing off', () => {
    const r = holdsReport({ version: 'v1.37.2', mutatingPolicies: true, installed: ALL });
    assert.equal(r.version, 'v1.37.2');
    assert.equal(r.active.length, 5);
    assert.deepEqual(r.off, []);
    assert.ok(r.active.some((a) => a.startsWith('Deployment held at admission')));
  });

  it('no MutatingAdmissionPolicy v1 (before 1.36): everything off, each saying the API is not served', () => {
    const r = holdsReport({ version: 'v1.35.4', mutatingPolicies: false, installed: [] });
    assert.deepEqual(r.active, []);
    assert.equal(r.off.length, 5);
    for (const o of r.off) assert.match(o, /MutatingAdmissionPolicy v1 not served \(Kubernetes 1\.36 or later\)$/);
    assert.ok(r.off.some((o) => o.startsWith('Deployment rollouts in place')));
    assert.ok(r.off.some((o) => o.startsWith('SidecarSet injection')));
  });

  it('served but installed without the holds (the pre-1.36 component on 1.36): the missing ones off, naming their policy', () => {
    const r = holdsReport({ version: 'v1.36.3', mutatingPolicies: true, installed: ['requester', 'sidecarInjection'] });
    assert.deepEqual(r.active, ['ContainerRestart requester written at admission', 'SidecarSet injection at pod creation']);
    assert.equal(r.off.length, 3);
    assert.match(r.off[0]!, /^Deployment rollouts in place .*: policy inplace-agent-hold-deployment not installed$/);
    assert.match(r.off[1]!, /policy inplace-agent-hold-statefulset not installed$/);
    assert.match(r.off[2]!, /policy inplace-agent-hold-daemonset not installed$/);
  });
});
