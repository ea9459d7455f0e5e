// Whether a ContainerRestart's pod is this node's to restart.
import type { V1Pod } from '../../k8s/client.js';
import type { Pod } from '../../runtime/types.js';
import { KUBELET_POD_UID_LABEL } from '../../engine/restart-plan.js';

/** A request's pod found on this node: `api` is the API server's pod; absent for a sandbox no API server knows. */
export interface FoundPod {
  api?: Pick<V1Pod, 'metadata' | 'spec' | 'status'>;
}

/**
 * Whether the pod's named containers have started since it came to this node: each has run at least once (it
 * runs, ended, or restarted), as the kubelet reports it. Until then a request waits for the pod as for one that is
 * not here: a pod just bound to the node has no container to restart yet.
 */
export function podStarted(pod: Pick<V1Pod, 'status'>, containers: readonly string[]): boolean {
  const all = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
  return containers.every((name) => {
    const s = all.find((c) => c.name === name);
    // No status at all: the kubelet has not reported the pod yet. A name missing from the statuses it reported is
    // the engine's to refuse (ContainerNotFound), not a reason to wait.
    if (!s) return all.length > 0;
    return s.restartCount > 0 || s.state?.running !== undefined || s.state?.terminated !== undefined;
  });
}

/**
 * A pod is this node's when the API server schedules it here (`scheduledHere`), or when the runtime runs it as a
 * standalone pod that no API server knows (no kubelet labels, sandbox ready). A kubelet's sandbox left on this node
 * by an earlier pod of the same name (a StatefulSet pod since re-created on another node) does not count: its
 * pod is that other node's, and only the API server says where a kubelet's pod lives.
 */
export function podIsHere(scheduledHere: boolean, runtimePods: readonly Pod[], namespace: string, name: string): boolean {
  if (scheduledHere) return true;
  return runtimePods.some((p) => p.name === `${namespace}/${name}` && p.state === 'ready' && !p.labels[KUBELET_POD_UID_LABEL]);
}
