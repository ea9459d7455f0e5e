// The list requests behind the rollout coordinator's watches (rollout-cache.ts), one per kind of read, each with
// the selectors of its watch, on the API server of a KubeConfig.
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig, type KubernetesListObject } from '../../k8s/client.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION } from '../container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL } from '../image-prewarm/types.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION } from './types.js';
import type { Obj } from '../kit/watch-cache.js';

export type { Obj } from '../kit/watch-cache.js';

/** The list requests behind the watches, one per kind of read (each with the selectors of its watch). */
export interface RolloutLists {
  rollouts(namespace?: string): Promise<KubernetesListObject<Obj>>;
  workload(namespace: string, kind: 'StatefulSet' | 'DaemonSet', fieldSelector: string): Promise<KubernetesListObject<Obj>>;
  revisions(namespace: string, labelSelector: string): Promise<KubernetesListObject<Obj>>;
  pods(namespace: string, labelSelector: string): Promise<KubernetesListObject<Obj>>;
  restarts(namespace: string, labelSelector: string): Promise<KubernetesListObject<Obj>>;
  prewarms(labelSelector: string): Promise<KubernetesListObject<Obj>>;
}

/** The list requests on the API server of kc. */
export function kubeLists(kc: KubeConfig): RolloutLists {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  type L = Promise<KubernetesListObject<Obj>>;
  return {
    rollouts: (namespace) =>
      (namespace
        ? custom.listNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace })
        : custom.listClusterCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL })) as L,
    // DaemonSets untyped, as their watch events and KubeRolloutApi.getWorkload have them (every template field kept).
    workload: (namespace, kind, fieldSelector) =>
      (kind === 'StatefulSet' ? apps.listNamespacedStatefulSet({ namespace, fieldSelector }) : custom.listNamespacedCustomObject({ group: 'apps', version: 'v1', plural: 'daemonsets', namespace, fieldSelector })) as L,
    revisions: (namespace, labelSelector) => apps.listNamespacedControllerRevision({ namespace, labelSelector }) as L,
    pods: (namespace, labelSelector) => core.listNamespacedPod({ namespace, labelSelector }) as L,
    restarts: (namespace, labelSelector) => custom.listNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace, labelSelector }) as L,
    prewarms: (labelSelector) => custom.listClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, labelSelector }) as L,
  };
}
