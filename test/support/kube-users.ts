// Users of the test cluster with exactly the rights a test gives them (ServiceAccounts with their own Roles,
// tokens from the TokenRequest API), and deploy/'s admission policies put in place or taken away.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { apiStatusCode, serverMessage } from '../../src/k8s/api-error.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The admission policies of deploy/, as applied by scripts/kube-deploy-agent. */
export const POLICY_FILES = ['admission-policy.yaml', 'admission-requester.yaml'];

/** A KubeConfig for the same API server that authenticates with a bearer token. */
export function tokenConfig(admin: k8s.KubeConfig, user: string, token: string): k8s.KubeConfig {
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('the admin kubeconfig names no cluster');
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: 'test' }],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: 'test', user }],
    currentContext: user,
  });
  return kc;
}

/** A user's kubeconfig and identity. */
export interface TestUser {
  kc: k8s.KubeConfig;
  /** system:serviceaccount:NS:NAME */
  username: string;
}

/**
 * A ServiceAccount ns/name holding exactly these rules: in ns (a Role), and cluster-wide (a ClusterRole named
 * after the namespace, so that deleting the namespace's objects and that role cleans up). Returns its kubeconfig.
 */
export async function userWithRules(admin: k8s.KubeConfig, ns: string, name: string, rules: k8s.V1PolicyRule[], clusterRules: k8s.V1PolicyRule[] = []): Promise<TestUser> {
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  const subject = { kind: 'ServiceAccount', name, namespace: ns };
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
  if (rules.length) {
    await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name }, rules } });
    await rbac.createNamespacedRoleBinding({ namespace: ns, body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects: [subject] } });
  }
  if (clusterRules.length) {
    const cname = `${ns}-${name}`;
    await rbac.createClusterRole({ body: { metadata: { name: cname, labels: { 'inplace-test': ns } }, rules: clusterRules } });
    await rbac.createClusterRoleBinding({
      body: { metadata: { name: cname, labels: { 'inplace-test': ns } }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: cname }, subjects: [subject] },
    });
  }
  const tr = await core.createNamespacedServiceAccountToken({ name, namespace: ns, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token for ${ns}/${name}`);
  return { kc: tokenConfig(admin, name, token), username: `system:serviceaccount:${ns}:${name}` };
}

/** Deletes the cluster-wide roles userWithRules made for namespace ns. */
export async function deleteClusterRules(admin: k8s.KubeConfig, ns: string): Promise<void> {
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  await rbac.deleteCollectionClusterRoleBinding({ labelSelector: `inplace-test=${ns}` }).catch(() => undefined);
  await rbac.deleteCollectionClusterRole({ labelSelector: `inplace-test=${ns}` }).catch(() => undefined);
}

/** The objects of deploy/<file>. */
export function deployObjects(file: string): k8s.KubernetesObject[] {
  return k8s.loadAllYaml(fs.readFileSync(path.join(root, 'deploy', file), 'utf8')) as k8s.KubernetesObject[];
}

/** Creates or replaces every object of the deploy/ files. */
export async function applyDeployFiles(admin: k8s.KubeConfig, files: string[]): Promise<void> {
  const api = admin.makeApiClient(k8s.KubernetesObjectApi);
  for (const o of files.flatMap(deployObjects)) {
    try {
      await api.create(o);
    } catch (err) {
      if (apiStatusCode(err) !== 409) throw err;
      const cur = await api.read({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata?.name ?? '', namespace: o.metadata?.namespace } });
      await api.replace({ ...o, metadata: { ...o.metadata, resourceVersion: cur.metadata?.resourceVersion } });
    }
  }
}

/** Deletes every object of the deploy/ files (missing ones are fine). */
export async function deleteDeployFiles(admin: k8s.KubeConfig, files: string[]): Promise<void> {
  const api = admin.makeApiClient(k8s.KubernetesObjectApi);
  for (const o of files.flatMap(deployObjects)) {
    await api.delete(o).catch((err: unknown) => {
      if (apiStatusCode(err) !== 404) throw err;
    });
  }
}

/** HTTP status (0: none) and the API server's message of a failed API call. */
export function failure(err: unknown): { code: number; message: string } {
  return { code: apiStatusCode(err) ?? 0, message: serverMessage(err) ?? (err instanceof Error ? err.message : String(err)) };
}

/** Polls probe until it returns a value; fails after ms with what was last seen. */
export async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>, last: () => string = () => ''): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${last() ? `; last seen: ${last()}` : ''}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}
