// The agent's identity as deploy/ ships it, for tests that run agents against the real API server: the objects
// of deploy/ (ServiceAccount, roles, bindings) installed as written, and a kubeconfig that authenticates as that
// ServiceAccount (a TokenRequest), so that an agent gets exactly the permissions users grant it, never admin's.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { apiStatusCode } from '../../src/k8s/api-error.js';
import { kubeEnv } from '../testbed/kube-env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** The agent's ServiceAccount in deploy/serviceaccount.yaml. */
export const AGENT_SA = { namespace: 'inplace-system', name: 'inplace-agent' };

/** The objects of deploy/<files>, as shipped. */
export function shippedObjects(files: string[]): k8s.KubernetesObject[] {
  return files.flatMap((f) => k8s.loadAllYaml(fs.readFileSync(path.join(root, 'deploy', f), 'utf8')) as k8s.KubernetesObject[]);
}

/**
 * Creates each object, or replaces the one that exists (an earlier run's, or the DaemonSet install's). Returns
 * the objects it created, for the test to delete again: a grant left behind would change what other tests see.
 */
export async function applyObjects(kc: k8s.KubeConfig, objects: k8s.KubernetesObject[]): Promise<k8s.KubernetesObject[]> {
  const api = kc.makeApiClient(k8s.KubernetesObjectApi);
  return createEach(kc, objects, async (o) => {
    const cur = await api.read({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata?.name ?? '', namespace: o.metadata?.namespace } } as k8s.KubernetesObject & { metadata: { name: string } });
    await api.replace({ ...o, metadata: { ...o.metadata, resourceVersion: cur.metadata?.resourceVersion } });
  });
}

/**
 * Creates each object that is not there yet and leaves the ones that are as they are (on the shared cluster,
 * deploy/ as its DaemonSet was installed, perhaps from a newer branch). Returns the objects it created.
 */
export function ensureObjects(kc: k8s.KubeConfig, objects: k8s.KubernetesObject[]): Promise<k8s.KubernetesObject[]> {
  return createEach(kc, objects, async () => undefined);
}

/** Creates each object, none of which may exist yet (names of a run's own); on a failure deletes what it created and throws. */
export async function createObjects(kc: k8s.KubeConfig, objects: k8s.KubernetesObject[]): Promise<k8s.KubernetesObject[]> {
  const api = kc.makeApiClient(k8s.KubernetesObjectApi);
  const created: k8s.KubernetesObject[] = [];
  try {
    for (const o of objects) {
      await api.create(o);
      created.push(o);
    }
  } catch (err) {
    await deleteObjects(kc, created).catch(() => undefined);
    throw err;
  }
  return created;
}

/** Creates each object in order, calling exists for those already there (409); returns the ones it created. */
async function createEach(kc: k8s.KubeConfig, objects: k8s.KubernetesObject[], exists: (o: k8s.KubernetesObject) => Promise<void>): Promise<k8s.KubernetesObject[]> {
  const api = kc.makeApiClient(k8s.KubernetesObjectApi);
  const created: k8s.KubernetesObject[] = [];
  for (const o of objects) {
    try {
      await api.create(o);
      created.push(o);
    } catch (err) {
      if (apiStatusCode(err) !== 409) throw err;
      await exists(o);
    }
  }
  return created;
}

/** Deletes the objects (already gone is fine). */
export async function deleteObjects(kc: k8s.KubeConfig, objects: k8s.KubernetesObject[]): Promise<void> {
  const api = kc.makeApiClient(k8s.KubernetesObjectApi);
  for (const o of [...objects].reverse()) {
    await api.delete(o).catch((err: unknown) => {
      if (apiStatusCode(err) !== 404) throw err;
    });
  }
}

/**
 * Writes a kubeconfig that authenticates as the agent's ServiceAccount, or as sa (a token from the TokenRequest
 * API, valid for an hour) against kc's API server, and returns its path. The token is bound to the Node object
 * `node` (default: the test cluster's first node, where the tests' host agents run), so the API server names that
 * node in its user's extra as it does for the DaemonSet's pod-bound token: deploy/node-isolation-policy.yaml refuses
 * every write of an agent token that names no node.
 */
export async function agentKubeconfig(kc: k8s.KubeConfig, sa: { name: string; namespace: string } = AGENT_SA, node = kubeEnv().nodeName): Promise<string> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const uid = (await core.readNode({ name: node })).metadata?.uid;
  const tr = await core.createNamespacedServiceAccountToken({
    name: sa.name,
    namespace: sa.namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: node, uid } } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token for ServiceAccount ${sa.namespace}/${sa.name}`);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const ca = cluster.caFile ? fs.readFileSync(cluster.caFile) : cluster.caData ? Buffer.from(cluster.caData, 'base64') : undefined;
  const user = `system:serviceaccount:${sa.namespace}:${sa.name}`;
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server: cluster.server, ...(ca ? { 'certificate-authority-data': ca.toString('base64') } : {}) } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user } }],
    'current-context': 'test',
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-sa-'));
  const file = path.join(dir, 'kubeconfig');
  fs.writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  return file;
}
