// Test helpers for the real API server of the sandbox's cluster: apply CRDs from deploy/, make namespaces and
// bare Node objects (no kubelet behind them) for agents that play extra nodes.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { apiStatusCode } from '../../src/k8s/api-error.js';
import { kubeEnv } from '../testbed/kube-env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The test cluster's admin kubeconfig (scripts/kube-sandbox; see kubeEnv), or undefined when it is missing. */
export function testKubeConfig(): k8s.KubeConfig | undefined {
  const file = kubeEnv().kubeconfig;
  if (!fs.existsSync(file)) return undefined;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

/** Creates or replaces the CRDs in deploy/crds/<files> and waits until they are Established. */
export async function applyCrds(kc: k8s.KubeConfig, files: string[]): Promise<void> {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  for (const f of files) {
    const body = k8s.loadYaml<k8s.V1CustomResourceDefinition>(fs.readFileSync(path.join(root, 'deploy/crds', f), 'utf8'));
    const name = body.metadata!.name!;
    try {
      await ext.createCustomResourceDefinition({ body });
    } catch (err) {
      if (apiStatusCode(err) !== 409) throw err;
      const cur = await ext.readCustomResourceDefinition({ name });
      body.metadata!.resourceVersion = cur.metadata!.resourceVersion;
      await ext.replaceCustomResourceDefinition({ name, body });
    }
    const deadline = Date.now() + 20_000;
    for (;;) {
      const cur = await ext.readCustomResourceDefinition({ name });
      if (cur.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established in 20s`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Creates a namespace (no error when it exists). */
export async function ensureNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    if (apiStatusCode(err) !== 409) throw err;
  }
}

/** Creates (or relabels) a bare Node object with these labels: a name agents can claim, no kubelet behind it. */
export async function ensureNode(kc: k8s.KubeConfig, name: string, labels: Record<string, string>): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.createNode({ body: { metadata: { name, labels }, spec: { unschedulable: true } } });
  } catch (err) {
    if (apiStatusCode(err) !== 409) throw err;
    const cur = await core.readNode({ name });
    cur.metadata!.labels = { ...(cur.metadata!.labels ?? {}), ...labels };
    await core.replaceNode({ name, body: cur });
  }
}

/** Deletes Node objects (missing ones are fine). */
export async function deleteNodes(kc: k8s.KubeConfig, names: string[]): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  for (const name of names) await core.deleteNode({ name }).catch(() => undefined);
}
