// The cluster a Kubernetes-facing command talks to, by kubectl's conventions: --kubeconfig (else $KUBECONFIG,
// else in-cluster), --context (else the kubeconfig's current context), and the namespace from -n, else the
// context's, else default.
import type { KubeConfig } from '@kubernetes/client-node';
import { AgentError } from '../errors.js';

/** What selects the cluster and namespace. */
export interface KubeTarget {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
}

/** The client configuration for target (loaded lazily: the Kubernetes client is large); InvalidArgument when there is none. */
export async function loadTarget(target: KubeTarget): Promise<KubeConfig> {
  const { loadKubeConfig } = await import('../kube/kubeconfig.js');
  const kc = loadKubeConfig({ kubeconfig: target.kubeconfig });
  if (!kc) throw new AgentError('InvalidArgument', 'no Kubernetes API configured: give --kubeconfig, set $KUBECONFIG, or run in a cluster');
  if (target.context) {
    if (!kc.getContexts().some((c) => c.name === target.context)) {
      throw new AgentError('InvalidArgument', `context "${target.context}" is not in the kubeconfig (it has: ${kc.getContexts().map((c) => c.name).join(', ') || 'none'})`);
    }
    kc.setCurrentContext(target.context);
  }
  return kc;
}

/** The namespace for target in kc: -n, else the current context's, else default. */
export function namespaceOf(kc: KubeConfig, target: KubeTarget): string {
  return target.namespace || kc.getContextObject(kc.getCurrentContext())?.namespace || 'default';
}
