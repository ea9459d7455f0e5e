// The Helm chart deploy/helm/inplace-agent: generated from deploy/ (scripts/helm-chart), so it must be what the
// generator gives now; `helm lint` passes; and `helm template` renders the same objects as `kubectl kustomize`
// of deploy/ with the matching components, for the defaults and for each runtime and optional part. The one
// documented difference: the order of the agent's env, volumeMounts and volumes (kustomize's patches put what
// they change first), so lists are compared by name. helm is scripts/build-deps helm's (built by .ci/run).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadAllYaml, type V1DaemonSet } from '@kubernetes/client-node';
import { chartFiles } from '../../scripts/helm-chart/chart.js';
import { CHART, helm } from '../support/helm.js';
import { agentOf, envValue, find, plain, renderDeploy, REPO_ROOT, type Rendered } from '../support/deploy-render.js';

/** The Kubernetes version helm renders for (the chart needs >= 1.30; helm's offline default is older). */
const KUBE_VERSION = '1.36.0';

/** `helm template` of the chart with these --set values. */
function template(set: string[] = []): Rendered[] {
  const out = helm(['template', 'inplace-agent', CHART, '--kube-version', KUBE_VERSION, ...set.flatMap((s) => ['--set', s])]);
  // helm leaves the documents of disabled templates empty (comments only)
  const docs = out.split(/^---[ \t]*$/m).filter((d) => d.replace(/#.*$/gm, '').trim());
  return plain(loadAllYaml(docs.join('\n---\n')) as Rendered[]);
}

/**
 * Objects keyed kind/namespace/name, with the two documented differences taken out: the agent's lists sorted by
 * name, and blank lines in strings dropped (kustomize writes the MutatingAdmissionPolicy's folded `>-` CEL
 * expression back with an extra blank line, whitespace to CEL).
 */
function normalized(objs: Rendered[]): Record<string, Rendered> {
  const out: Record<string, Rendered> = {};
  const unblank = JSON.parse(JSON.stringify(objs, (_k, v: unknown) => (typeof v === 'string' ? v.replace(/\n[ \t]*(?=\n)/g, '') : v))) as Rendered[];
  for (const o of unblank) {
    if (o.kind === 'DaemonSet') {
      const spec = (o as V1DaemonSet).spec?.template.spec;
      const agent = spec?.containers[0];
      const by = <T>(key: (x: T) => string) => (a: T, b: T) => key(a).localeCompare(key(b));
      agent?.env?.sort(by((e) => e.name));
      agent?.volumeMounts?.sort(by((m) => m.mountPath));
      spec?.volumes?.sort(by((v) => v.name));
    }
    out[`${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`] = o;
  }
  return out;
}

describe('the Helm chart deploy/helm/inplace-agent', function () {
  this.timeout(60_000);

  it('is what scripts/helm-chart generates from deploy/ now (npm run gen:helm)', () => {
    for (const [file, text] of chartFiles(REPO_ROOT)) {
      assert.equal(readFileSync(path.join(CHART, file), 'utf8'), text, `${file} is stale: run npm run gen:helm`);
    }
  });

  it('passes helm lint, with the defaults and with every runtime', () => {
    for (const runtime of ['containerd', 'crio', 'docker', 'k3s']) {
      assert.match(helm(['lint', '--strict', CHART, '--kube-version', KUBE_VERSION, '--set', `runtime=${runtime}`]), /1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  const pairs: [string, string[], string[]][] = [
    ['the defaults', [], []],
    ['runtime=crio', ['runtime=crio'], ['components/runtime-crio']],
    ['runtime=docker', ['runtime=docker'], ['components/runtime-docker']],
    ['runtime=k3s', ['runtime=k3s'], ['components/runtime-k3s']],
    ['admissionPolicies.mutating=false (1.30-1.35)', ['admissionPolicies.mutating=false'], ['components/pre-1.36']],
    ['metrics.onNodeIP=true', ['metrics.onNodeIP=true'], ['components/metrics-on-node-ip']],
    ['fleetPrewarmRBAC=true', ['fleetPrewarmRBAC=true'], ['optional']],
    ['all of them at once', ['runtime=k3s', 'admissionPolicies.mutating=false', 'metrics.onNodeIP=true', 'fleetPrewarmRBAC=true'],
      ['components/runtime-k3s', 'components/pre-1.36', 'components/metrics-on-node-ip', 'optional']],
  ];
  for (const [what, set, components] of pairs) {
    it(`helm template with ${what} renders what kubectl kustomize does${components.length ? ` with ${components.join(', ')}` : ''}`, () => {
      const h = normalized(template(set));
      const k = normalized(renderDeploy(components));
      assert.deepEqual(Object.keys(h).sort(), Object.keys(k).sort());
      for (const key of Object.keys(k)) assert.deepEqual(h[key], k[key], key);
    });
  }

  it('takes the image by repository and tag, or by digest', () => {
    assert.equal(agentOf(template(['image.repository=registry.example.com/ops/inplace-agent', 'image.tag=0.1.1'])).agent.image, 'registry.example.com/ops/inplace-agent:0.1.1');
    const digest = `sha256:${'b'.repeat(64)}`;
    assert.equal(agentOf(template(['image.repository=registry.example.com/inplace-agent', `image.digest=${digest}`])).agent.image, `registry.example.com/inplace-agent@${digest}`);
  });

  it('takes resources, tolerations, the node selector, the priority class and the Pod Security labels from values', () => {
    const objs = template(['resources.requests.memory=128Mi', 'tolerations=null', 'priorityClassName=', 'nodeSelector.pool=agents', 'namespace.podSecurity.warn=privileged']);
    const { pod, agent } = agentOf(objs);
    assert.equal(agent.resources?.requests?.memory, '128Mi');
    assert.equal(pod.tolerations, undefined);
    assert.equal(pod.priorityClassName, undefined);
    assert.deepEqual(pod.nodeSelector, { 'kubernetes.io/os': 'linux', pool: 'agents' });
    assert.deepEqual(find(objs, 'Namespace').metadata?.labels, {
      'app.kubernetes.io/name': 'inplace-agent',
      'pod-security.kubernetes.io/enforce': 'privileged',
      'pod-security.kubernetes.io/enforce-version': 'latest',
      'pod-security.kubernetes.io/warn': 'privileged',
    });
    assert.equal(template(['namespace.create=false']).some((o) => o.kind === 'Namespace'), false);
    assert.equal(envValue(agentOf(template()).agent, 'METRICS_HOST'), '127.0.0.1');
  });

  it('takes the agent\'s log level (none by default: the agent\'s own, info)', () => {
    assert.ok(agentOf(template(['logLevel=debug'])).agent.args?.includes('--log-level=debug'));
    assert.equal(agentOf(template()).agent.args?.some((a) => a.startsWith('--log-level')), false);
  });

  it('refuses a runtime it has no paths for, naming the ones it has', () => {
    assert.throws(() => template(['runtime=podman']), /runtime "podman" is not one of containerd, crio, docker, k3s/);
  });
});
