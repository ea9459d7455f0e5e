// deploy/'s RBAC against the real API server: the agent's ServiceAccount may do exactly the listed verbs, checked
// with SubjectAccessReviews over every verb of the resources an agent could be tempted to touch.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AuthorizationV1Api,
  KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { kubeEnv } from '../testbed/kube-env.js';
import { requireRuntime } from '../support/require-runtime.js';
import { apiStatusCode } from '../../src/kube/api-error.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const env = kubeEnv();
const SA_NS = 'inplace-system';
const SA = 'inplace-agent';

const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'] as const;
type Verb = (typeof VERBS)[number];

// group, resource, subresource -> the verbs deploy/rbac.yaml grants (everything else must be refused)
const GRANTED: [string, string, string, Verb[]][] = [
  ['', 'pods', '', ['get', 'list', 'watch', 'patch', 'delete']],
  ['', 'pods', 'status', ['patch']],
  ['', 'events', '', ['create', 'patch']],
  ['inplace-agent.io', 'containerrestarts', '', ['get', 'list', 'watch', 'create', 'delete']],
  ['inplace-agent.io', 'containerrestarts', 'status', ['patch', 'update']],
  ['discovery.k8s.io', 'endpointslices', '', ['get', 'list', 'watch']],
  ['authorization.k8s.io', 'subjectaccessreviews', '', ['create']],
  ['apps', 'statefulsets', '', ['get', 'list', 'watch']],
  ['apps', 'daemonsets', '', ['get', 'list', 'watch']],
  ['apps', 'controllerrevisions', '', ['get', 'list', 'watch']],
  ['inplace-agent.io', 'inplacerollouts', '', ['get', 'list', 'watch']],
  ['inplace-agent.io', 'inplacerollouts', 'status', ['update']],
  ['inplace-agent.io', 'imageprewarms', '', ['get', 'list', 'watch', 'create', 'delete']],
];
const REFUSED_EVERYWHERE: [string, string, string][] = [
  ['', 'secrets', ''],
  ['', 'configmaps', ''],
  ['', 'pods', 'exec'],
  ['', 'pods', 'log'],
  ['', 'pods', 'eviction'],
  ['', 'pods', 'ephemeralcontainers'],
  ['', 'services', ''],
  ['', 'endpoints', ''],
  ['', 'nodes', ''],
  ['', 'serviceaccounts', 'token'],
  ['apps', 'deployments', ''],
  ['apps', 'replicasets', ''],
  ['events.k8s.io', 'events', ''],
  ['rbac.authorization.k8s.io', 'clusterroles', ''],
];

describe('deploy/ RBAC (SubjectAccessReviews on the real API server)', function () {
  this.timeout(60_000);
  let authz: AuthorizationV1Api;

  before(async function () {
    const kc = new KubeConfig();
    await requireRuntime(this, `the test cluster (kubeconfig ${env.kubeconfig})`, async () => {
      kc.loadFromFile(env.kubeconfig);
      authz = kc.makeApiClient(AuthorizationV1Api);
      await kc.makeApiClient(KubernetesObjectApi).list('v1', 'Namespace', undefined, undefined, undefined, undefined, undefined, undefined, 1);
    });
    // Install exactly what deploy/ says (create, or replace what an earlier run or the DaemonSet install left).
    const objects = ['namespace.yaml', 'serviceaccount.yaml', 'rbac.yaml'].flatMap(
      (f) => loadAllYaml(readFileSync(path.join(root, 'deploy', f), 'utf8')) as KubernetesObject[],
    );
    const api = kc.makeApiClient(KubernetesObjectApi);
    for (const o of objects) {
      try {
        await api.create(o);
      } catch (err) {
        if (apiStatusCode(err) !== 409) throw err;
        await api.replace(o);
      }
    }
  });

  async function allowed(group: string, resource: string, subresource: string, verb: string, namespace?: string): Promise<boolean> {
    const res = await authz.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${SA_NS}:${SA}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${SA_NS}`, 'system:authenticated'],
          resourceAttributes: { group, resource, subresource, verb, namespace },
        },
      },
    });
    return res.status?.allowed === true;
  }

  it('grants each listed verb, in any namespace and cluster-wide', async () => {
    for (const [group, resource, sub, verbs] of GRANTED) {
      for (const verb of verbs) {
        for (const ns of ['default', 'team-a', undefined]) {
          assert.equal(await allowed(group, resource, sub, verb, ns), true, `${verb} ${group}/${resource}/${sub} in ${ns ?? '(all)'}`);
        }
      }
    }
  });

  it('refuses every other verb on those resources', async () => {
    for (const [group, resource, sub, verbs] of GRANTED) {
      for (const verb of VERBS.filter((v) => !verbs.includes(v))) {
        assert.equal(await allowed(group, resource, sub, verb, 'default'), false, `${verb} ${group}/${resource}/${sub} must be refused`);
      }
    }
  });

  it('refuses reading Secrets and everything on resources it was not given', async () => {
    assert.equal(await allowed('', 'secrets', '', 'get', SA_NS), false, 'reading a Secret in its own namespace');
    for (const [group, resource, sub] of REFUSED_EVERYWHERE) {
      for (const verb of VERBS) {
        assert.equal(await allowed(group, resource, sub, verb, 'default'), false, `${verb} ${group}/${resource}/${sub} must be refused`);
      }
    }
  });
});
