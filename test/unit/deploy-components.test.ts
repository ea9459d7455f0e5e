// deploy/ and its kustomize components rendered with `kubectl kustomize`, as an operator's overlay would: the
// default install (a valid image, the namespace's Pod Security label, the agent's security context, /metrics on
// loopback, a startupProbe) and what each component changes (runtime paths, the pre-1.36 policies, metrics on the
// node's address, the fleet pre-warm's RBAC). The cluster test of the default install is kube-install.test.ts.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { V1ClusterRole, V1Container, V1Namespace, V1PodSpec } from '@kubernetes/client-node';
import { agentOf, DEPLOY_DIR, envValue, find, renderDeploy, type Rendered } from '../support/deploy-render.js';

/** A reference a container runtime can pull: [registry[:port]/]path[:tag][@sha256:digest], lowercase path. */
const IMAGE_REF = /^(?:[a-z0-9.-]+(?::[0-9]+)?\/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/;

function mounts(agent: V1Container): Record<string, string> {
  return Object.fromEntries((agent.volumeMounts ?? []).map((m) => [m.mountPath, `${m.name}${m.readOnly ? ' ro' : ''}`]));
}
function hostPaths(pod: V1PodSpec): Record<string, string> {
  return Object.fromEntries((pod.volumes ?? []).filter((v) => v.hostPath).map((v) => [v.name, `${v.hostPath?.path} ${v.hostPath?.type}`]));
}
const kinds = (objs: Rendered[]) => objs.map((o) => `${o.kind}/${o.metadata?.name}`).sort();

describe('deploy/ and its components, rendered by kubectl kustomize', function () {
  this.timeout(60_000);
  let base: Rendered[];
  let pod: V1PodSpec;
  let agent: V1Container;
  before(() => {
    base = renderDeploy();
    ({ pod, agent } = agentOf(base));
  });

  it('the default install renders a valid image reference, registry.invalid until the operator names theirs', () => {
    assert.equal(agent.image, 'registry.invalid/inplace-agent:0.1.0');
    assert.match(agent.image ?? '', IMAGE_REF);
    const { agent: set } = agentOf(renderDeploy([], 'images:\n  - name: registry.invalid/inplace-agent\n    newName: registry.example.com:5000/ops/inplace-agent\n    digest: sha256:' + 'a'.repeat(64) + '\n'));
    assert.equal(set.image, `registry.example.com:5000/ops/inplace-agent@sha256:${'a'.repeat(64)}`, 'an overlay names the image by the default name');
  });

  it('labels the namespace to enforce the privileged Pod Security level (host network, hostPaths)', () => {
    const ns = find(base, 'Namespace', 'inplace-system') as V1Namespace;
    assert.equal(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce'], 'privileged');
    assert.equal(pod.hostNetwork, true);
  });

  it('runs the agent with no capability, no privilege escalation and the runtime default seccomp profile', () => {
    assert.deepEqual(agent.securityContext, {
      privileged: false,
      readOnlyRootFilesystem: true,
      runAsUser: 0,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  it('serves /metrics on the node loopback, probes it there, and has a startupProbe', () => {
    assert.ok(agent.args?.includes('--metrics-addr=[$(METRICS_HOST)]:9464'));
    assert.equal(envValue(agent, 'METRICS_HOST'), '127.0.0.1');
    for (const probe of [agent.startupProbe, agent.readinessProbe, agent.livenessProbe]) assert.equal(probe?.httpGet?.host, '127.0.0.1');
    assert.equal(agent.startupProbe?.httpGet?.path, '/healthz');
    assert.ok((agent.startupProbe?.periodSeconds ?? 0) * (agent.startupProbe?.failureThreshold ?? 0) >= 60, 'at least a minute to start');
    assert.equal(find(base, 'DaemonSet').metadata?.annotations?.['prometheus.io/scrape'], undefined);
  });

  it('talks to containerd by default: its socket directory and its root (read-only)', () => {
    assert.equal(envValue(agent, 'INPLACE_AGENT_RUNTIME'), 'cri');
    assert.equal(envValue(agent, 'INPLACE_AGENT_CRI_ENDPOINT'), 'unix:///run/containerd/containerd.sock');
    assert.equal(mounts(agent)['/run/containerd'], 'runtime-sock-dir');
    assert.equal(mounts(agent)['/var/lib/containerd'], 'runtime-root ro');
    assert.equal(hostPaths(pod)['runtime-sock-dir'], '/run/containerd Directory');
    assert.equal(hostPaths(pod)['runtime-root'], '/var/lib/containerd Directory');
  });

  const runtimes: [string, Record<string, string | undefined>, Record<string, string>, Record<string, string>][] = [
    ['runtime-crio', { INPLACE_AGENT_RUNTIME: 'cri', INPLACE_AGENT_CRI_ENDPOINT: 'unix:///run/crio/crio.sock' },
      { '/run/crio': 'runtime-sock-dir', '/var/lib/containers/storage': 'runtime-root ro' },
      { 'runtime-sock-dir': '/run/crio Directory', 'runtime-root': '/var/lib/containers/storage Directory' }],
    ['runtime-k3s', { INPLACE_AGENT_RUNTIME: 'cri', INPLACE_AGENT_CRI_ENDPOINT: 'unix:///run/k3s/containerd/containerd.sock' },
      { '/run/k3s/containerd': 'runtime-sock-dir', '/var/lib/rancher/k3s/agent/containerd': 'runtime-root ro' },
      { 'runtime-sock-dir': '/run/k3s/containerd Directory', 'runtime-root': '/var/lib/rancher/k3s/agent/containerd Directory' }],
    ['runtime-docker', { INPLACE_AGENT_RUNTIME: 'docker', INPLACE_AGENT_CRI_ENDPOINT: undefined, INPLACE_AGENT_DOCKER_HOST: 'unix:///run/docker.sock' },
      { '/run/docker.sock': 'runtime-sock-dir', '/var/lib/docker': 'runtime-root ro' },
      { 'runtime-sock-dir': '/run/docker.sock Socket', 'runtime-root': '/var/lib/docker Directory' }],
  ];
  for (const [name, env, wantMounts, wantPaths] of runtimes) {
    it(`components/${name}: the runtime's socket and root, and nothing of containerd's left`, () => {
      const { pod: p, agent: a } = agentOf(renderDeploy([`components/${name}`]));
      for (const [k, v] of Object.entries(env)) assert.equal(envValue(a, k), v, k);
      const m = mounts(a);
      for (const [k, v] of Object.entries(wantMounts)) assert.equal(m[k], v, k);
      assert.equal(m['/run/containerd'], undefined);
      assert.equal(m['/var/lib/containerd'], undefined);
      assert.equal(Object.values(m).filter((v) => v.startsWith('runtime-')).length, 2, 'one socket mount, one root mount');
      for (const [k, v] of Object.entries(wantPaths)) assert.equal(hostPaths(p)[k], v, k);
      assert.deepEqual(a.securityContext?.capabilities, { drop: ['ALL'] }, 'the security context stays');
    });
  }

  it('components/pre-1.36: the ValidatingAdmissionPolicies stay, every MutatingAdmissionPolicy goes, nothing else changes', () => {
    const pre = renderDeploy(['components/pre-1.36']);
    const gone = kinds(base).filter((k) => k.startsWith('MutatingAdmissionPolicy'));
    assert.ok(gone.includes('MutatingAdmissionPolicy/inplace-agent-requester'), 'the requester policy is one of those left out');
    assert.deepEqual(kinds(pre), kinds(base).filter((k) => !gone.includes(k)));
    const vaps = (objs: typeof pre) => objs.filter((o) => o.kind === 'ValidatingAdmissionPolicy').length;
    assert.ok(vaps(base) >= 3);
    assert.equal(vaps(pre), vaps(base));
    assert.ok(pre.every((o) => o.apiVersion !== 'admissionregistration.k8s.io/v1beta1'));
  });

  it('components/metrics-on-node-ip: the pod IP from the downward API, the probes on it, the scrape annotations', () => {
    const objs = renderDeploy(['components/metrics-on-node-ip']);
    const { agent: a } = agentOf(objs);
    assert.equal(envValue(a, 'METRICS_HOST'), 'fieldRef:status.podIP');
    assert.equal(a.env?.find((e) => e.name === 'METRICS_HOST')?.value, undefined);
    for (const probe of [a.startupProbe, a.readinessProbe, a.livenessProbe]) {
      assert.equal(probe?.httpGet?.host, undefined);
      assert.equal(probe?.httpGet?.port, 'metrics');
    }
    const tpl = (find(objs, 'DaemonSet') as { spec: { template: { metadata: { annotations?: Record<string, string> } } } }).spec.template.metadata;
    assert.deepEqual(tpl.annotations, { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9464' });
  });

  it('optional/ as a component: the fleet pre-warm RBAC (get on Secrets) added to the install', () => {
    const objs = renderDeploy(['optional']);
    const role = find(objs, 'ClusterRole', 'inplace-agent-fleet-prewarm') as V1ClusterRole;
    assert.ok(role.rules?.some((r) => r.resources?.includes('secrets') && r.verbs.join() === 'get'));
    assert.equal(objs.length, base.length + 4);
    assert.equal(base.some((o) => o.metadata?.name === 'inplace-agent-fleet-prewarm'), false, 'not in the default install');
  });

  it('every component directory is covered here, and they all render together', () => {
    assert.deepEqual(readdirSync(path.join(DEPLOY_DIR, 'components')).sort(), ['metrics-on-node-ip', 'pre-1.36', 'runtime-crio', 'runtime-docker', 'runtime-k3s']);
    const all = renderDeploy(['components/pre-1.36', 'components/runtime-k3s', 'components/metrics-on-node-ip', 'optional']);
    assert.equal(envValue(agentOf(all).agent, 'INPLACE_AGENT_CRI_ENDPOINT'), 'unix:///run/k3s/containerd/containerd.sock');
  });
});
