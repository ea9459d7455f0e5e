// The cluster a Kubernetes-facing command talks to, by kubectl's conventions: --kubeconfig (else $KUBECONFIG,
// else ~/.kube/config, else in-cluster), --context (else the kubeconfig's current context), the namespace from
// -n, else the context's, else default; every request with the --request-timeout deadline.
import type { KubeConfig } from '@kubernetes/client-node';
import { AgentError } from '../errors.js';
import { limitKubeRequests, requestTimeoutMs } from './request-timeout.js';

/** What selects the cluster and namespace. */
export interface KubeTarget {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  /** --request-timeout as given (default 30s). */
  requestTimeout?: string;
}

/** The client configuration for target (loaded lazily: the Kubernetes client is large); InvalidArgument when there is none. */
export async function loadTarget(target: KubeTarget): Promise<KubeConfig> {
  const timeoutMs = requestTimeoutMs(target.requestTimeout ?? '30s');
  const { loadKubeConfig } = await import('../k8s/kubeconfig.js');
  const kc = loadKubeConfig({ kubeconfig: target.kubeconfig, context: target.context });
  if (!kc) throw new AgentError('InvalidArgument', 'no Kubernetes API configured: give --kubeconfig, set $KUBECONFIG, create ~/.kube/config, or run in a cluster');
  return limitKubeRequests(kc, timeoutMs);
}

/** The namespace for target in kc: -n, else the current context's, else default. */
export function namespaceOf(kc: KubeConfig, target: KubeTarget): string {
  return target.namespace || kc.getContextObject(kc.getCurrentContext())?.namespace || 'default';
}
