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

/** All pods, ready and not ready; withIp reads each pod's status for its IP. Pods removed while listing are left out. */
export async function listPods(client: CriClient, withIp = true): Promise<Pod[]> {
  const { items } = await client.listPodSandbox({});
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
