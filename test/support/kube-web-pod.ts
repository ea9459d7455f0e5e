// The start several tests against the shared test cluster share: the cluster required (the suite skipped
// without it), and a pod `web` pinned to the cluster's first node whose containers exit 0 on SIGTERM.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { kubeEnv } from '../testbed/kube-env.js';
import { requireRuntime } from './require-runtime.js';

/** A container command that traps TERM and exits 0, so that a same-image restart's next instance starts at once. */
export const TRAP_TERM_APP = `trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`;

/**
 * For a mocha `before` hook: loads the test cluster's admin kubeconfig into kc and reads its first node, or skips
 * the suite (fails it under INPLACE_REQUIRE_RUNTIMES=1). Returns the core API on kc.
 */
export async function requireTestCluster(ctx: Mocha.Context, kc: KubeConfig): Promise<CoreV1Api> {
  const env = kubeEnv();
  let core: CoreV1Api | undefined;
  await requireRuntime(ctx, `the test cluster (kubeconfig ${env.kubeconfig})`, async () => {
    kc.loadFromFile(env.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    await core.readNode({ name: env.nodeName });
  });
  return core as CoreV1Api;
}

/** Creates pod `web` in ns on the cluster's first node: one container per name, on the app v1 image, running TRAP_TERM_APP. */
export async function createWebPod(core: CoreV1Api, ns: string, containers: string[]): Promise<void> {
  const env = kubeEnv();
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: 'web' },
      spec: {
        nodeName: env.nodeName,
        terminationGracePeriodSeconds: 5,
        containers: containers.map((name) => ({ name, image: env.sandbox.images.appV1, args: ['sh', '-c', TRAP_TERM_APP] })),
      },
    },
  });
}
