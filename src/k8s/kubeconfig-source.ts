// Where the Kubernetes client configuration comes from, found without loading the Kubernetes client library:
// an agent with none stays out of Kubernetes mode and never pays for that library's memory (about 60 MiB). The
// agent and the clients look in different places: the agent only at --kubeconfig and in-cluster, the clients
// by kubectl's conventions ($KUBECONFIG too).
import fs from 'node:fs';
import { AgentError } from '../errors.js';

/** Where the in-cluster service account token is mounted. */
export const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** A kubeconfig file (with the later files of a $KUBECONFIG list merged into it), or the in-cluster service account. */
export type KubeConfigSource = { kind: 'file'; file: string; more?: string[] } | { kind: 'in-cluster' };

/**
 * Where the agent's Kubernetes mode takes its configuration: `kubeconfig` (--kubeconfig, a file that must exist),
 * else in-cluster (KUBERNETES_SERVICE_HOST and the service account token); undefined when neither. $KUBECONFIG is
 * not read: a workstation's kubeconfig is for its clients, and must not turn a hand-run agent into a node agent.
 */
export function agentKubeConfigSource(opts: { kubeconfig?: string }, env: NodeJS.ProcessEnv = process.env): KubeConfigSource | undefined {
  if (opts.kubeconfig) return kubeConfigSource(opts, env);
  return kubeConfigSource({}, { KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST });
}

/** What the agent logs when $KUBECONFIG is set and it stays out of Kubernetes mode. */
export const KUBECONFIG_LEFT_ASIDE = 'not in Kubernetes mode: $KUBECONFIG is for clients and is not read by the agent; give --kubeconfig (or run in a cluster) for Kubernetes mode';

/** The refusal of Kubernetes mode without a node name, saying what turned Kubernetes mode on. */
export function kubeModeNeedsNode(source: KubeConfigSource): string {
  const why = source.kind === 'file' ? `--kubeconfig ${source.file} was given` : 'the agent runs in a cluster (service account mounted)';
  return `Kubernetes mode (${why}) needs this node's name: give --node-name or set $NODE_NAME`;
}

/**
 * A client's configuration, by kubectl's conventions: `kubeconfig` (a file that must exist), else $KUBECONFIG (its
 * existing files, merged as kubectl merges them: the first to name a cluster, user, context or current-context
 * wins), else $HOME/.kube/config, else in-cluster (KUBERNETES_SERVICE_HOST and the service account token);
 * undefined when none.
 */
export function kubeConfigSource(opts: { kubeconfig?: string }, env: NodeJS.ProcessEnv = process.env): KubeConfigSource | undefined {
  if (opts.kubeconfig) {
    if (!fs.existsSync(opts.kubeconfig)) throw new AgentError('InvalidArgument', `--kubeconfig: no such file ${opts.kubeconfig}`);
    return { kind: 'file', file: opts.kubeconfig };
  }
  const fromEnv = [...new Set((env.KUBECONFIG ?? '').split(':'))].filter((f) => f !== '' && fs.existsSync(f));
  if (fromEnv.length > 0) return fromEnv.length === 1 ? { kind: 'file', file: fromEnv[0] } : { kind: 'file', file: fromEnv[0], more: fromEnv.slice(1) };
  const home = env.KUBECONFIG ? undefined : env.HOME && `${env.HOME}/.kube/config`;
  if (home && fs.existsSync(home)) return { kind: 'file', file: home };
  if (env.KUBERNETES_SERVICE_HOST && fs.existsSync(SERVICE_ACCOUNT_TOKEN)) return { kind: 'in-cluster' };
  return undefined;
}
