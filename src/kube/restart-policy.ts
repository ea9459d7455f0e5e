// Would the kubelet start a container again after the agent stops it (same image) or changes its image? The
// agent restarts a kubelet-managed container only through the kubelet, so it refuses, before touching anything,
// what the kubelet would leave down. A container's own restartPolicy and restartPolicyRules (KEP-5307) override
// the pod's; sidecars (init containers with restartPolicy Always) restart whatever the pod's policy.
import type { V1Container, V1ContainerRestartRule, V1Pod } from '../k8s/client.js';

/** Exit codes a container stopped with SIGTERM (then SIGKILL) may end with: a clean exit, TERM, KILL. */
const STOP_EXIT_CODES = [0, 143, 137];

/** The container of the pod spec with this name, and whether it is a sidecar; undefined when there is none. */
export function specContainer(pod: V1Pod, name: string): { container: V1Container; sidecar: boolean; init: boolean } | undefined {
  const main = pod.spec?.containers.find((c) => c.name === name);
  if (main) return { container: main, sidecar: false, init: false };
  const init = pod.spec?.initContainers?.find((c) => c.name === name);
  if (init) return { container: init, sidecar: init.restartPolicy === 'Always', init: true };
  return undefined;
}

/** Whether the rules (first match wins) or else the policy restart a container that exited with code. */
function restartsOn(code: number, policy: string, rules: V1ContainerRestartRule[]): boolean {
  for (const r of rules) {
    const on = r.exitCodes;
    if (!on) continue;
    const listed = (on.values ?? []).includes(code);
    if ((on.operator === 'In' && listed) || (on.operator === 'NotIn' && !listed)) return r.action === 'Restart';
  }
  return policy === 'Always' || (policy === 'OnFailure' && code !== 0);
}

/**
 * Why the kubelet would not bring the container back after the agent's restart; undefined when it would.
 * sameImage: the agent stops the container (it may exit 0); otherwise its image is changed in the spec.
 */
export function kubeletRefusal(pod: V1Pod, name: string, sameImage: boolean): string | undefined {
  const found = specContainer(pod, name);
  const podName = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  if (!found) return `container "${name}" is not in the spec of pod ${podName}`;
  if (found.sidecar) return undefined;
  if (found.init) return `"${name}" is an init container of pod ${podName}; it runs to completion and is not restarted in place`;
  const c = found.container;
  const podPolicy = pod.spec?.restartPolicy ?? 'Always';
  const policy = c.restartPolicy ?? podPolicy;
  const whose = c.restartPolicy ? `container "${name}" has restartPolicy ${policy}` : `pod ${podName} has restartPolicy ${policy}`;
  const rules = c.restartPolicyRules ?? [];
  if (policy === 'Never' && rules.length === 0) return `${whose}: the kubelet would not start "${name}" again`;
  if (sameImage) {
    const down = STOP_EXIT_CODES.filter((code) => !restartsOn(code, policy, rules));
    if (down.length === 0) return undefined;
    return `${whose}${rules.length ? ' (with restartPolicyRules)' : ''}: the kubelet would not start "${name}" again after it exits with code ${down.join(' or ')} on a stop; only a new image can be rolled out to it`;
  }
  return undefined;
}
