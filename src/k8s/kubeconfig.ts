// Loads the Kubernetes client configuration from where kubeconfig-source.ts found it.
import { KubeConfig } from './client.js';
import { AgentError } from '../errors.js';
import { keepConnections } from './keep-alive.js';
import { kubeConfigSource, type KubeConfigSource } from './kubeconfig-source.js';

/** The client configuration from where kubeConfigSource finds it (kubectl's order); undefined when none. */
export function loadKubeConfig(opts: { kubeconfig?: string; context?: string }, env: NodeJS.ProcessEnv = process.env): KubeConfig | undefined {
  const source = kubeConfigSource(opts, env);
  return source ? kubeConfigFrom(source, opts.context) : undefined;
}

/**
 * The client configuration read from `source` (its API calls over kept connections), in `context` when given (else
 * the current one); InvalidArgument when the file cannot be used or has no such context.
 */
export function kubeConfigFrom(source: KubeConfigSource, context?: string): KubeConfig {
  const kc = keepConnections(new KubeConfig());
  if (source.kind === 'in-cluster') {
    kc.loadFromCluster();
    return kc;
  }
  readInto(kc, source.file);
  for (const file of source.more ?? []) mergeFirstWins(kc, readFile(file));
  if (context) {
    if (!kc.getContexts().some((c) => c.name === context)) {
      throw new AgentError('InvalidArgument', `context "${context}" is not in the kubeconfig (it has: ${kc.getContexts().map((c) => c.name).join(', ') || 'none'})`);
    }
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentCluster()) throw new AgentError('InvalidArgument', `kubeconfig ${[source.file, ...(source.more ?? [])].join(':')} names no current cluster`);
  return kc;
}

function readFile(file: string): KubeConfig {
  return readInto(new KubeConfig(), file);
}

function readInto(kc: KubeConfig, file: string): KubeConfig {
  try {
    kc.loadFromFile(file);
  } catch (err) {
    throw new AgentError('InvalidArgument', `kubeconfig ${file} cannot be read: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  return kc;
}

/** kubectl's merge of a $KUBECONFIG list: what an earlier file named is kept, the later file adds the rest. */
function mergeFirstWins(into: KubeConfig, later: KubeConfig): void {
  if (!into.currentContext && later.currentContext) into.setCurrentContext(later.currentContext);
  for (const c of later.clusters) if (!into.clusters.some((x) => x.name === c.name)) into.addCluster(c);
  for (const u of later.users) if (!into.users.some((x) => x.name === u.name)) into.addUser(u);
  for (const c of later.contexts) if (!into.contexts.some((x) => x.name === c.name)) into.addContext(c);
}
