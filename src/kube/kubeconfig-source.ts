// Where the Kubernetes client configuration comes from, found without loading the Kubernetes client library:
// an agent with none stays out of Kubernetes mode and never pays for that library's memory (about 60 MiB).
import fs from 'node:fs';
import { AgentError } from '../errors.js';

/** Where the in-cluster service account token is mounted. */
export const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** A kubeconfig file, or the in-cluster service account. */
export type KubeConfigSource = { kind: 'file'; file: string } | { kind: 'in-cluster' };

/**
 * `kubeconfig` (a file that must exist), else $KUBECONFIG (the first existing file of the list), else in-cluster
 * (KUBERNETES_SERVICE_HOST and the service account token); undefined when none. Kubernetes mode is on exactly when
 * one is found.
 */
export function kubeConfigSource(opts: { kubeconfig?: string }, env: NodeJS.ProcessEnv = process.env): KubeConfigSource | undefined {
  if (opts.kubeconfig) {
    if (!fs.existsSync(opts.kubeconfig)) throw new AgentError('InvalidArgument', `--kubeconfig: no such file ${opts.kubeconfig}`);
    return { kind: 'file', file: opts.kubeconfig };
  }
  const fromEnv = (env.KUBECONFIG ?? '').split(':').filter((f) => f !== '' && fs.existsSync(f));
  if (fromEnv.length > 0) return { kind: 'file', file: fromEnv[0] };
  if (env.KUBERNETES_SERVICE_HOST && fs.existsSync(SERVICE_ACCOUNT_TOKEN)) return { kind: 'in-cluster' };
  return undefined;
}
