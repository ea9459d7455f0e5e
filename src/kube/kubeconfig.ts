// Where the agent and inplacectl find the Kubernetes API: --kubeconfig, then $KUBECONFIG, then the in-cluster
// service account. Undefined when none of them is there (the agent then runs without Kubernetes mode).
import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';

/** Loads a kubeconfig from the flag, $KUBECONFIG or the in-cluster environment; undefined when none. */
export function loadKubeConfig(opts: { kubeconfig?: string }): KubeConfig | undefined {
  const kc = new KubeConfig();
  const file = opts.kubeconfig ?? process.env.KUBECONFIG;
  if (file) {
    kc.loadFromFile(file);
    return kc;
  }
  if (process.env.KUBERNETES_SERVICE_HOST && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) {
    kc.loadFromCluster();
    return kc;
  }
  return undefined;
}
