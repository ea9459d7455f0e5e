// The pod this process runs in, when it runs in one: POD_NAMESPACE and POD_NAME (the downward API), else the
// ServiceAccount's namespace file and the hostname (a pod's hostname is its name unless it uses the host's
// network). Used to refuse requests that would have the agent stop itself.
import fs from 'node:fs';
import os from 'node:os';

/** The in-cluster ServiceAccount namespace file. */
const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** namespace and name of this process's pod, or undefined outside a pod. */
export function selfPod(env: NodeJS.ProcessEnv = process.env, readNamespace: () => string | undefined = readSaNamespace, hostname: () => string = os.hostname): { namespace: string; name: string } | undefined {
  if (env.POD_NAMESPACE && env.POD_NAME) return { namespace: env.POD_NAMESPACE, name: env.POD_NAME };
  const namespace = readNamespace();
  if (!namespace) return undefined;
  return { namespace, name: hostname() };
}

function readSaNamespace(): string | undefined {
  try {
    return fs.readFileSync(SA_NAMESPACE_FILE, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
