// Finds the Kubernetes client configuration: an explicit file, then $KUBECONFIG, then the in-cluster service
// account. Kubernetes mode is on exactly when one is found.
import fs from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { AgentError } from '../errors.js';

/** Where the in-cluster service account token is mounted. */
export const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * The client configuration: `kubeconfig` (a file that must exist), else $KUBECONFIG (the first existing file
 * of the list), else in-cluster (KUBERNETES_SERVICE_HOST and the service account token); undefined when none.
 */
export function loadKubeConfig(opts: { kubeconfig?: string }, env: NodeJS.ProcessEnv = process.env): KubeConfig | undefined {
  const kc = new KubeConfig();
  if (opts.kubeconfig) {
    if (!fs.existsSync(opts.kubeconfig)) throw new AgentError('InvalidArgument', `--kubeconfig: no such file ${opts.kubeconfig}`);
    loadFile(kc, opts.kubeconfig);
    return kc;
  }
  const fromEnv = (env.KUBECONFIG ?? '').split(':').filter((f) => f !== '' && fs.existsSync(f));
  if (fromEnv.length > 0) {
    loadFile(kc, fromEnv[0]);
    return kc;
  }
  if (env.KUBERNETES_SERVICE_HOST && fs.existsSync(SERVICE_ACCOUNT_TOKEN)) {
    kc.loadFromCluster();
    return kc;
  }
  return undefined;
}

function loadFile(kc: KubeConfig, file: string): void {
  try {
    kc.loadFromFile(file);
  } catch (err) {
    throw new AgentError('InvalidArgument', `kubeconfig ${file} cannot be read: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  if (!kc.getCurrentCluster()) throw new AgentError('InvalidArgument', `kubeconfig ${file} names no current cluster`);
}
