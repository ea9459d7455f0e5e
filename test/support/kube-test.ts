// The preamble of a test against the project's cluster (scripts/kube-sandbox): its admin client, once its first
// node answers (else the suite is skipped, or fails under INPLACE_REQUIRE_RUNTIMES=1), and the one poll these
// tests wait with.
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { kubeEnv } from '../testbed/kube-env.js';
import { requireRuntime } from './require-runtime.js';

/** The test cluster's admin kubeconfig, loaded, and its core API. */
export interface KubeTest {
  kc: KubeConfig;
  core: CoreV1Api;
  /** The admin kubeconfig's path. */
  kubeconfig: string;
}

/** For a mocha `before` hook: the test cluster, checked by reading its first node. */
export async function kubeTest(ctx: Mocha.Context): Promise<KubeTest> {
  const env = kubeEnv();
  const kc = new KubeConfig();
  let core: CoreV1Api | undefined;
  await requireRuntime(ctx, `the test cluster (kubeconfig ${env.kubeconfig})`, async () => {
    kc.loadFromFile(env.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    await core.readNode({ name: env.nodeName });
  });
  return { kc, core: core as CoreV1Api, kubeconfig: env.kubeconfig };
}

/**
 * Polls probe every everyMs (default 200) until it returns a value; a probe that throws counts as "not yet".
 * Fails after ms naming what was awaited, the last error and what seen() shows.
 */
export async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>, opts: { everyMs?: number; seen?: () => string } = {}): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const seen = opts.seen?.() ?? '';
      throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${String(last)}` : ''}${seen ? `; last seen: ${seen}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 200));
  }
}
