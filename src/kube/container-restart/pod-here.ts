// Whether a ContainerRestart's pod is this node's to restart.
import type { Pod } from '../../runtime/types.js';
import { KUBELET_POD_UID_LABEL } from '../../engine/restart-plan.js';

/** A request's pod found on this node: `api` is the API server's pod; absent for a sandbox no API server knows. */
export interface FoundPod {
  api?: { metadata?: { annotations?: Record<string, string> } };
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
