// What the InPlaceRollout tests wait for on the shared cluster: the agents of the DaemonSet on every node, and a
// rollout's decision as the coordinator writes it in the status.
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, type InPlaceRollout } from '../../src/controllers/rollout/types.js';
import { until } from './kube-users.js';

/** The namespace of deploy/'s DaemonSet. */
export const AGENT_NS = 'inplace-system';

const isReady = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** The cluster's Ready nodes; throws unless a Ready agent of the DaemonSet runs on each of them. */
export async function agentOnEveryNode(kc: KubeConfig): Promise<string[]> {
  const core = kc.makeApiClient(CoreV1Api);
  const nodes = (await core.listNode()).items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).map((n) => n.metadata?.name ?? '');
  const agents = (await core.listNamespacedPod({ namespace: AGENT_NS, labelSelector: 'app.kubernetes.io/name=inplace-agent' })).items.filter((p) => isReady(p) && !p.metadata?.deletionTimestamp);
  for (const n of nodes) if (!agents.some((p) => p.spec?.nodeName === n)) throw new Error(`no Ready agent on node ${n}`);
  return nodes;
}

/**
 * The rollout ns/name once the coordinator has written the status of its generation (and, with revision, seen the
 * workload's update revision) in one of phases; fails after ms naming the last status seen.
 */
export async function rolloutSettled(kc: KubeConfig, ns: string, name: string, phases: string[], revision?: () => Promise<string>, ms = 240_000): Promise<InPlaceRollout> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  let last = '';
  return until(
    `rollout ${name} to reach ${phases.join('|')}`,
    ms,
    async () => {
      const r = (await custom.getNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, name })) as InPlaceRollout;
      last = JSON.stringify(r.status);
      if (r.status?.observedGeneration !== r.metadata.generation) return undefined;
      if (revision && r.status?.updateRevision !== (await revision())) return undefined;
      return phases.includes(r.status?.phase ?? '') ? r : undefined;
    },
    () => last,
  );
}
