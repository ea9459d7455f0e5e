// Where the agent and inplacectl find the Kubernetes API: an explicit kubeconfig file, then $KUBECONFIG,
// then the in-cluster service account.
import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { AgentError } from '../errors.js';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * The kubeconfig to use: opts.kubeconfig, else $KUBECONFIG, else the in-cluster config when running in a pod;
 * undefined when none is found. A named file that cannot be read is an InvalidArgument error.
 */
export function loadKubeConfig(opts: { kubeconfig?: string }): KubeConfig | undefined {
  const file = opts.kubeconfig || process.env.KUBECONFIG;
  const kc = new KubeConfig();
  if (file) {
    try {
      kc.loadFromFile(file);
    } catch (err) {
      throw new AgentError('InvalidArgument', `cannot read kubeconfig ${file}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    if (!kc.getCurrentCluster()) throw new AgentError('InvalidArgument', `kubeconfig ${file} names no current cluster`);
    return kc;
  }
  if (process.env.KUBERNETES_SERVICE_HOST && existsSync(SERVICE_ACCOUNT_TOKEN)) {
    kc.loadFromCluster();
    return kc;
  }
  return undefined;
}
