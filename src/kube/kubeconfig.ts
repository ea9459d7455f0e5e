// Loads the Kubernetes client configuration from where kubeconfig-source.ts found it.
import { KubeConfig } from './client.js';
import { AgentError } from '../errors.js';
import { keepConnections } from './keep-alive.js';
import { kubeConfigSource, type KubeConfigSource } from './kubeconfig-source.js';

/**
 * The client configuration: `kubeconfig` (a file that must exist), else $KUBECONFIG (the first existing file
 * of the list), else in-cluster (KUBERNETES_SERVICE_HOST and the service account token); undefined when none.
 */
export function loadKubeConfig(opts: { kubeconfig?: string }, env: NodeJS.ProcessEnv = process.env): KubeConfig | undefined {
  const source = kubeConfigSource(opts, env);
  return source ? kubeConfigFrom(source) : undefined;
}

/** The client configuration read from `source` (its API calls over kept connections); InvalidArgument when the file cannot be used. */
export function kubeConfigFrom(source: KubeConfigSource): KubeConfig {
  const kc = keepConnections(new KubeConfig());
  if (source.kind === 'in-cluster') {
    kc.loadFromCluster();
    return kc;
  }
  try {
    kc.loadFromFile(source.file);
  } catch (err) {
    throw new AgentError('InvalidArgument', `kubeconfig ${source.file} cannot be read: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  if (!kc.getCurrentCluster()) throw new AgentError('InvalidArgument', `kubeconfig ${source.file} names no current cluster`);
  return kc;
}
