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
 * A ServiceAccount `inplace-agent-RUN` in namespace (which must exist) with deploy/'s ClusterRoles copied as
 * `NAME-RUN` and bound to it, and deploy/'s Roles (the fleet's slot Role among them) copied into namespace;
 * the agents' Leases then live in namespace (give the agents `--fleet-namespace namespace`).
 */
export async function ownAgentIdentity(kc: k8s.KubeConfig, namespace: string, run: string): Promise<OwnAgentIdentity> {
  const sa = { name: `inplace-agent-${run}`, namespace };
  const labels = { [OWN_IDENTITY_LABEL]: run };
  const subject = { kind: 'ServiceAccount', name: sa.name, namespace };
  const shipped = shippedObjects(['rbac.yaml', 'optional/fleet-prewarm-rbac.yaml']);
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
  return {
    kubeconfig: await agentKubeconfig(kc, sa),
    username: `system:serviceaccount:${namespace}:${sa.name}`,
    remove: () => deleteObjects(kc, created),
  };
}
