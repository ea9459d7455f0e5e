// The Kubernetes API the ContainerRestart tests run against: the project's cluster (scripts/kube-sandbox's
// admin kubeconfig, or $INPLACE_KUBECONFIG / $KUBECONFIG), else a private etcd + kube-apiserver started here
// from the built binaries.
// The CRD is applied from deploy/crds, and each suite works in namespaces of its own that it deletes.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { apiStatusCode } from '../../src/k8s/api-error.js';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { applyCrds } from './kube-apply.js';
import { kubeBinDir, startPrivateApiServer, type PrivateApiServer } from './private-apiserver.js';
import { requireRuntime } from './require-runtime.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** The CRD manifest shipped in deploy/. */
export const CRD_FILE = path.join(root, 'deploy/crds/containerrestart.yaml');

/** An API server to test against. */
export interface TestCluster {
  kubeconfig: string;
  kc: KubeConfig;
  /** Set when the cluster was started by the test (it may then be restarted). */
  private?: PrivateApiServer;
  close(): Promise<void>;
}

/** For a mocha `before` hook: the cluster, or the suite skipped (failed under INPLACE_REQUIRE_RUNTIMES=1). */
export async function testCluster(ctx: Mocha.Context, opts: { private?: boolean } = {}): Promise<TestCluster> {
  const project = kubeEnv().kubeconfig;
  const shared = process.env.INPLACE_KUBECONFIG || process.env.KUBECONFIG || (fs.existsSync(project) ? project : undefined);
  let cluster: TestCluster | undefined;
  await requireRuntime(ctx, opts.private || !shared ? 'a private kube-apiserver (scripts/build-deps kubernetes)' : `the Kubernetes cluster of ${shared}`, async () => {
    if (shared && !opts.private) {
      const kc = new KubeConfig();
      kc.loadFromFile(shared);
      await kc.makeApiClient(CoreV1Api).listNamespace({ limit: 1 });
      cluster = { kubeconfig: shared, kc, close: async () => undefined };
      return;
    }
    const bin = kubeBinDir();
    if (!bin) throw new Error('the Kubernetes binaries are not built (run scripts/build-deps kubernetes)');
    const p = await startPrivateApiServer(bin);
    const kc = new KubeConfig();
    kc.loadFromFile(p.kubeconfig);
    cluster = { kubeconfig: p.kubeconfig, kc, private: p, close: () => p.stop() };
  });
  return cluster as TestCluster;
}

/** Applies the ContainerRestart CRD (create, or replace when it exists) and waits until its API is served. */
export async function applyCrd(kc: KubeConfig): Promise<void> {
  await applyCrds(kc, [path.basename(CRD_FILE)]);
  // Established can come a moment before the API serves the kind: wait until a list answers.
  const api = new ContainerRestartApi(kc);
  const deadline = Date.now() + 30_000;
  while (!(await api.list('default').then(() => true, () => false))) {
    if (Date.now() > deadline) throw new Error(`the ContainerRestart API is not served 30 s after its CRD was Established`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Creates a namespace named prefix-<random>. */
export async function createNamespace(kc: KubeConfig, prefix = 'kcrd'): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

/** Deletes a namespace (and so every object in it); already gone is fine. */
export async function deleteNamespace(kc: KubeConfig, name: string): Promise<void> {
  await kc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name })
    .catch((err: unknown) => {
      if (apiStatusCode(err) !== 404) throw err;
    });
}
