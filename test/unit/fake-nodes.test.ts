// bench:fleet's fake Nodes and the shipped DaemonSet: the agent's DaemonSet selects a node with a kubelet's labels
// and not a fake node with only the bench's label, so the simulated fleet gets no Pending agent pods.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { selectsNode } from '../../bench/fake-nodes.js';
import { shippedObjects } from '../support/kube-shipped-rbac.js';

const KUBELET_NODE = { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': 'inplace-node' };
const FAKE_NODE = { 'inplace-agent.bench/fleet': 'yes' };

describe("bench:fleet's fake nodes", () => {
  it('the shipped agent DaemonSet selects a kubelet node and not a fake one', () => {
    const ds = shippedObjects(['daemonset.yaml']).find((o) => o.kind === 'DaemonSet') as k8s.V1DaemonSet | undefined;
    const spec = ds?.spec?.template.spec;
    assert.ok(spec, 'deploy/daemonset.yaml holds a DaemonSet');
    assert.equal(selectsNode(spec, KUBELET_NODE), true);
    assert.equal(selectsNode(spec, FAKE_NODE), false);
  });

  it('follows nodeSelector and required node affinity as the DaemonSet controller does', () => {
    assert.equal(selectsNode({}, FAKE_NODE), true, 'no rule: every node');
    assert.equal(selectsNode({ nodeSelector: { 'inplace-agent.bench/fleet': 'yes' } }, FAKE_NODE), true);
    const affinity = (key: string, operator: string, values?: string[]): Pick<k8s.V1PodSpec, 'affinity'> => ({
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator, values }] }] } } },
    });
    assert.equal(selectsNode(affinity('kubernetes.io/os', 'In', ['linux']), FAKE_NODE), false);
    assert.equal(selectsNode(affinity('kubernetes.io/os', 'In', ['linux']), KUBELET_NODE), true);
    assert.equal(selectsNode(affinity('inplace-agent.bench/fleet', 'DoesNotExist'), FAKE_NODE), false);
    assert.equal(selectsNode(affinity('node-role.kubernetes.io/control-plane', 'DoesNotExist'), FAKE_NODE), true);
    assert.equal(selectsNode(affinity('kubernetes.io/os', 'NotIn', ['windows']), FAKE_NODE), true);
    assert.equal(selectsNode(affinity('kubernetes.io/os', 'Exists'), FAKE_NODE), false);
  });
});
