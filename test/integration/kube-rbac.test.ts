// deploy/'s RBAC against the real API server: a ServiceAccount bound to deploy/rbac.yaml's roles (rules as
// shipped, test/support/own-agent-identity.ts) may do exactly the listed verbs, checked with SubjectAccessReviews
// over every verb of the resources an agent could be tempted to touch.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { AuthorizationV1Api, KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { kubeEnv } from '../testbed/kube-env.js';
import { requireRuntime } from '../support/require-runtime.js';
import { ensureNamespace } from '../support/kube-apply.js';
import { deleteNamespace } from '../support/kube-cluster.js';
import { until } from '../support/kube-test.js';
import { ownAgentIdentity, type OwnAgentIdentity } from '../support/own-agent-identity.js';

const env = kubeEnv();
const run = randomBytes(3).toString('hex');
/** The namespace of this run's ServiceAccount. */
const SA_NS = `krbac-${run}`;

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
  ['', 'serviceaccounts', '', ['get']],
  ['apps', 'statefulsets', '', ['get', 'list', 'watch', 'patch']],
  ['apps', 'daemonsets', '', ['get', 'list', 'watch', 'patch']],
  ['apps', 'controllerrevisions', '', ['get', 'list', 'watch']],
  ['apps', 'deployments', '', ['get', 'list', 'watch', 'patch']],
  ['apps', 'replicasets', '', ['get', 'list', 'watch', 'patch', 'create']],
  ['inplace-agent.io', 'inplacerollouts', '', ['get', 'list', 'watch']],
  ['inplace-agent.io', 'inplacerollouts', 'status', ['update']],
  ['inplace-agent.io', 'imageprewarms', '', ['get', 'list', 'watch', 'create', 'delete']],
  ['inplace-agent.io', 'sidecarsets', '', ['get', 'list', 'watch']],
  ['inplace-agent.io', 'sidecarsets', 'status', ['update']],
  ['', 'namespaces', '', ['list']],
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
  ['events.k8s.io', 'events', ''],
  ['rbac.authorization.k8s.io', 'clusterroles', ''],
];

describe('deploy/ RBAC (SubjectAccessReviews on the real API server)', function () {
  this.timeout(60_000);
  const kc = new KubeConfig();
  let authz: AuthorizationV1Api;
  let identity: OwnAgentIdentity | undefined;

  before(async function () {
    await requireRuntime(this, `the test cluster (kubeconfig ${env.kubeconfig})`, async () => {
      kc.loadFromFile(env.kubeconfig);
      authz = kc.makeApiClient(AuthorizationV1Api);
      await kc.makeApiClient(KubernetesObjectApi).list('v1', 'Namespace', undefined, undefined, undefined, undefined, undefined, undefined, 1);
    });
    // deploy/rbac.yaml's rules exactly, bound to a ServiceAccount of this run's own: the shipped ServiceAccount's
    // grants belong to the DaemonSet and may hold the optional fleet RBAC while a rollout test or bench runs.
    await ensureNamespace(kc, SA_NS);
    identity = await ownAgentIdentity(kc, SA_NS, run, ['rbac.yaml']);
    // The RBAC authorizer learns of new bindings through its watch: wait until it answers with them.
    await until('the bindings in effect', 10_000, async () => ((await allowed('', 'pods', '', 'get', 'default')) ? true : undefined));
  });

  after(async () => {
    await identity?.remove();
    await deleteNamespace(kc, SA_NS);
  });

  async function allowed(group: string, resource: string, subresource: string, verb: string, namespace?: string): Promise<boolean> {
    const res = await authz.createSubjectAccessReview({
      body: {
        spec: {
          user: identity?.username ?? '',
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

  it('impersonation: of ServiceAccounts only, only to patch pods (constrained), never users, groups, uids or extras, never the legacy verb', async () => {
    assert.equal(await allowed('', 'pods', '', 'impersonate-on:serviceaccount:patch', 'default'), true, 'impersonate-on:serviceaccount:patch pods');
    for (const verb of ['get', 'create', 'delete', 'update']) assert.equal(await allowed('', 'pods', '', `impersonate-on:serviceaccount:${verb}`, 'default'), false, `impersonate-on:serviceaccount:${verb} pods`);
    for (const verb of ['patch', 'get', 'update']) assert.equal(await allowed('', 'pods', '', `impersonate-on:user-info:${verb}`, 'default'), false, `impersonate-on:user-info:${verb} pods`);
    for (const res of ['secrets', 'nodes', 'serviceaccounts']) assert.equal(await allowed('', res, '', 'impersonate-on:serviceaccount:get', 'default'), false, `impersonate-on:serviceaccount:get ${res}`);
    for (const res of ['users', 'groups', 'serviceaccounts']) assert.equal(await allowed('', res, '', 'impersonate'), false, `legacy impersonate ${res}`);
    assert.equal(await allowed('authentication.k8s.io', 'serviceaccounts', '', 'impersonate:serviceaccount', 'default'), true);
    for (const res of ['users', 'groups', 'uids', 'userextras']) assert.equal(await allowed('authentication.k8s.io', res, '', 'impersonate:user-info'), false, `impersonate:user-info ${res}`);
  });

  it('refuses reading Secrets and everything on resources it was not given', async () => {
    assert.equal(await allowed('', 'secrets', '', 'get', SA_NS), false, 'reading a Secret in its own namespace');
    for (const [group, resource, sub] of REFUSED_EVERYWHERE) {
      for (const verb of VERBS) {
        assert.equal(await allowed(group, resource, sub, verb, 'default'), false, `${verb} ${group}/${resource}/${sub} must be refused`);
      }
    }
  });

  it('MutatingAdmissionPolicies: get, only the five shipped ones by name (what the agent reports as held); nothing else', async () => {
    const named = async (verb: string, name?: string) => {
      const res = await authz.createSubjectAccessReview({
        body: { spec: { user: identity?.username ?? '', groups: ['system:authenticated'], resourceAttributes: { group: 'admissionregistration.k8s.io', resource: 'mutatingadmissionpolicies', verb, name } } },
      });
      return res.status?.allowed === true;
    };
    for (const name of ['inplace-agent-requester', 'inplace-agent-sidecarset', 'inplace-agent-hold-deployment', 'inplace-agent-hold-statefulset', 'inplace-agent-hold-daemonset']) {
      assert.equal(await named('get', name), true, `get ${name}`);
      for (const verb of ['update', 'patch', 'delete']) assert.equal(await named(verb, name), false, `${verb} ${name} must be refused`);
    }
    assert.equal(await named('get', 'someone-elses-policy'), false, 'get of a policy not shipped');
    for (const verb of ['list', 'watch', 'create']) assert.equal(await named(verb), false, `${verb} mutatingadmissionpolicies must be refused`);
  });
});
