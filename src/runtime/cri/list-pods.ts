// Pods of a CRI runtime: ListPodSandbox has no IPs, so each pod's status is read too.
import { AgentError } from '../../errors.js';
import type { Pod } from '../types.js';
import type { CriClient } from './client.js';
import { toPod } from './convert.js';

/** One pod by sandbox id, with its IP; NotFound naming the pod when there is none. */
export async function getPod(client: CriClient, podId: string): Promise<Pod> {
  const res = await client.podSandboxStatus(podId, false);
  if (!res.status) throw new AgentError('NotFound', `pod "${podId}" not found`);
  return toPod(res.status, res.status.network?.ip ?? '');
}

/** The labels the kubelet puts on every sandbox it makes (pkg/kubelet/types: KubernetesPodNamespaceLabel, ...NameLabel). */
const KUBELET_POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
const KUBELET_POD_NAME_LABEL = 'io.kubernetes.pod.name';

/** The label selector of what the kubelet made for pod NAMESPACE/NAME (its sandboxes, its containers). */
export function kubeletPodLabels(pod: string): Record<string, string> {
  const [ns = '', name = ''] = pod.split('/');
  return { [KUBELET_POD_NAMESPACE_LABEL]: ns, [KUBELET_POD_NAME_LABEL]: name };
}

/**
 * All pods, ready and not ready, or with kubeletPod (NAMESPACE/NAME) only the sandboxes the kubelet labelled as
 * that pod's (the runtime filters them: no list of every sandbox of a busy node); withIp reads each pod's status
 * for its IP. Pods removed while listing are left out.
 */
export async function listPods(client: CriClient, withIp = true, kubeletPod?: string): Promise<Pod[]> {
  const { items } = await client.listPodSandbox(kubeletPod ? { filter: { labelSelector: kubeletPodLabels(kubeletPod) } } : {});
  if (!withIp) return items.map((s) => toPod(s));
  const pods = await Promise.all(
    items.map(async (s) => {
      try {
        return await getPod(client, s.id);
      } catch (err) {
        if (AgentError.is(err, 'NotFound')) return undefined;
        throw err;
      }
    }),
  );
  return pods.filter((p): p is Pod => p !== undefined);
}
