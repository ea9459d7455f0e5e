// Pods of Kubernetes mode are named `namespace/name` by the runtime adapters.
import { AgentError } from '../../errors.js';

/** `namespace/name` split in two; FailedPrecondition for a name without a namespace (not a Kubernetes pod). */
export function splitName(podName: string): [string, string] {
  const i = podName.indexOf('/');
  if (i < 0) throw new AgentError('FailedPrecondition', `pod "${podName}" has no namespace: it is not a Kubernetes pod`);
  return [podName.slice(0, i), podName.slice(i + 1)];
}
