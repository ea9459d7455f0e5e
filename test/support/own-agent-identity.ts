// An agent identity of one test run's own: a ServiceAccount in the run's namespace, bound to copies of deploy/'s
// roles (rbac.yaml and the optional fleet pre-warm RBAC, rules as shipped) under names of the run's own. A test
// that runs agents on the host for the fleet pre-warm uses it instead of granting the optional RBAC to the
// shipped ServiceAccount inplace-system/inplace-agent: that one is shared by the DaemonSet, other tests and
// benches, and a run that removed the grants another run still needed broke it (docs/development.md).
import * as k8s from '@kubernetes/client-node';
import { agentKubeconfig, createObjects, deleteObjects, shippedObjects } from './kube-shipped-rbac.js';

/** Label on every object of an own identity: the run it belongs to. */
export const OWN_IDENTITY_LABEL = 'inplace-agent.test/identity';

/** What ownAgentIdentity made: the agents' kubeconfig, the ServiceAccount's user name, and how to remove it all. */
export interface OwnAgentIdentity {
  kubeconfig: string;
  username: string;
  remove(): Promise<void>;
}

/**
 * A ServiceAccount `inplace-agent-RUN` in namespace (which must exist) with the ClusterRoles of deploy/'s files
 * (default: rbac.yaml and the optional fleet RBAC) copied as
 * `NAME-RUN` and bound to it, and deploy/'s Roles (the fleet's slot Role among them) copied into namespace;
 * the agents' Leases then live in namespace (give the agents `--fleet-namespace namespace`).
 */
export async function ownAgentIdentity(kc: k8s.KubeConfig, namespace: string, run: string, files = ['rbac.yaml', 'optional/fleet-prewarm-rbac.yaml']): Promise<OwnAgentIdentity> {
  const sa = { name: `inplace-agent-${run}`, namespace };
  const labels = { [OWN_IDENTITY_LABEL]: run };
  const subject = { kind: 'ServiceAccount', name: sa.name, namespace };
  const shipped = shippedObjects(files);
  const objects: k8s.KubernetesObject[] = [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { ...sa, labels } } as k8s.KubernetesObject];
  for (const o of shipped) {
    const name = o.metadata?.name ?? '';
    if (o.kind === 'ClusterRole') {
      objects.push({ ...o, metadata: { name: `${name}-${run}`, labels } } as k8s.KubernetesObject);
      objects.push({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: `${name}-${run}`, labels },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${name}-${run}` },
        subjects: [subject],
      } as k8s.KubernetesObject);
    } else if (o.kind === 'Role') {
      objects.push({ ...o, metadata: { name, namespace, labels } } as k8s.KubernetesObject);
      objects.push({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name, namespace, labels },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [subject],
      } as k8s.KubernetesObject);
    }
  }
  const created = await createObjects(kc, objects);
  const username = `system:serviceaccount:${namespace}:${sa.name}`;
  await bindingsInEffect(kc, username, namespace, objects);
  return {
    kubeconfig: await agentKubeconfig(kc, sa),
    username,
    remove: () => deleteObjects(kc, created),
  };
}

/**
 * Waits until the API server's RBAC authorizer answers with every new binding (it learns of them through its
 * watch, a moment after they are created): the first rule of each bound role is allowed for the user.
 */
async function bindingsInEffect(kc: k8s.KubeConfig, user: string, namespace: string, objects: k8s.KubernetesObject[]): Promise<void> {
  const authz = kc.makeApiClient(k8s.AuthorizationV1Api);
  const groups = ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'];
  const probes = objects
    .filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role')
    .map((o) => {
      const rule = ((o as k8s.V1Role).rules ?? [])[0];
      const [resource, subresource] = (rule?.resources?.[0] ?? '').split('/');
      return { what: `${o.kind} ${o.metadata?.name}`, namespace: o.kind === 'Role' ? namespace : undefined, group: rule?.apiGroups?.[0] ?? '', resource, subresource, verb: rule?.verbs?.[0] ?? '' };
    })
    .filter((p) => p.resource && p.resource !== '*' && p.verb && p.verb !== '*');
  const deadline = Date.now() + 30_000;
  for (const p of probes) {
    for (;;) {
      const res = await authz.createSubjectAccessReview({ body: { spec: { user, groups, resourceAttributes: { group: p.group, resource: p.resource, subresource: p.subresource, verb: p.verb, namespace: p.namespace } } } });
      if (res.status?.allowed === true) break;
      if (Date.now() > deadline) throw new Error(`${p.what}: the API server's authorizer still refuses ${p.verb} ${p.group}/${p.resource} to ${user} 30 s after the binding was created`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
