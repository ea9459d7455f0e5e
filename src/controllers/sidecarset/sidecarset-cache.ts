// What the SidecarSet coordinator reads while it leads, kept by watches that read its own writes
// (kit/watch-cache.ts), as the rollout coordinator's: the SidecarSets; per SidecarSet its pods (its pod selector,
// every namespace), the ContainerRestarts and ImagePrewarms labelled with its uid. Every change heard wakes the
// coordinator, so an upgrade moves on as soon as a pod does, with no poll. Namespaces (for a namespaceSelector),
// NodePrewarm records and the reads after a taken name go to the API server.
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type KubernetesListObject, type V1Pod } from '../../k8s/client.js';
import type { FollowerDeps } from '../../k8s/list-follower.js';
import type { Requester } from '../../k8s/requester.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, type ImagePrewarm, type NodePrewarm } from '../image-prewarm/types.js';
import { directView, hasLabels, WatchCache, type CoordinatorView, type Obj } from '../kit/watch-cache.js';
import { SIDECARSET_LABEL } from './ownership.js';
import type { SidecarPrewarmAction } from './prewarm.js';
import { selectorString } from './selector.js';
import type { SidecarSetApi } from './sidecarset-api.js';
import { SCS_GROUP, SCS_PLURAL, SCS_VERSION, type SidecarSet, type SidecarSetStatus } from './types.js';

/** What the coordinator reads through while it leads: a SidecarSetCache, or the API server itself (no watches). */
export type SidecarSetView = SidecarSetApi & CoordinatorView;

/** The API server itself as a view: every read is a request, and no change is heard (rounds run on the resync). */
export const directSidecarView = (api: SidecarSetApi): SidecarSetView => directView(api);

/** The list requests behind the watches, one per kind of read (each with the selectors of its watch). */
export interface SidecarSetLists {
  sidecarSets(): Promise<KubernetesListObject<Obj>>;
  pods(labelSelector: string): Promise<KubernetesListObject<Obj>>;
  restarts(labelSelector: string): Promise<KubernetesListObject<Obj>>;
  prewarms(labelSelector: string): Promise<KubernetesListObject<Obj>>;
}

/** The list requests on the API server of kc. */
export function sidecarSetLists(kc: KubeConfig): SidecarSetLists {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  type L = Promise<KubernetesListObject<Obj>>;
  return {
    sidecarSets: () => custom.listClusterCustomObject({ group: SCS_GROUP, version: SCS_VERSION, plural: SCS_PLURAL }) as L,
    pods: (labelSelector) => core.listPodForAllNamespaces({ labelSelector }) as L,
    restarts: (labelSelector) => custom.listClusterCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, labelSelector }) as L,
    prewarms: (labelSelector) => custom.listClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, labelSelector }) as L,
  };
}

/** The reads of a round, from watches, and the writes, passed on to the API server and read back. */
export class SidecarSetCache extends WatchCache implements SidecarSetView {
  constructor(
    follow: FollowerDeps,
    private readonly lists: SidecarSetLists,
    /** Where writes, and reads that cannot come from a watch, go. */
    private readonly api: SidecarSetApi,
    clock: Clock,
    log: Logger,
  ) {
    super(follow, clock, log, 'the SidecarSet coordinator');
  }

  async listSidecarSets(): Promise<SidecarSet[]> {
    const items = await this.read('scs', 'scs', { path: `/apis/${SCS_GROUP}/${SCS_VERSION}/${SCS_PLURAL}`, list: () => this.lists.sidecarSets() }, () => this.api.listSidecarSets() as Promise<Obj[]>);
    return this.merged('scs', items, () => true) as unknown as SidecarSet[];
  }

  async listPods(set: SidecarSet): Promise<V1Pod[]> {
    const labelSelector = selectorString(set.spec.selector);
    return (await this.read('pod', `pod?${labelSelector}`, { path: '/api/v1/pods', list: () => this.lists.pods(labelSelector), labelSelector }, () => this.api.listPods(set) as Promise<Obj[]>)) as V1Pod[];
  }

  namespaceLabels(): Promise<Map<string, Record<string, string>>> {
    return this.api.namespaceLabels();
  }

  async listRestarts(set: SidecarSet): Promise<ContainerRestart[]> {
    const sel = { [SIDECARSET_LABEL]: set.metadata.uid ?? '' };
    const labelSelector = `${SIDECARSET_LABEL}=${set.metadata.uid ?? ''}`;
    const spec = { path: `/apis/${CR_GROUP}/${CR_VERSION}/${CR_PLURAL}`, list: () => this.lists.restarts(labelSelector), labelSelector };
    const items = await this.read('cr', `cr?${labelSelector}`, spec, () => this.api.listRestarts(set) as Promise<Obj[]>);
    return this.merged('cr', items, (o) => hasLabels(o, sel)) as ContainerRestart[];
  }

  getRestart(namespace: string, name: string): Promise<ContainerRestart | undefined> {
    return this.api.getRestart(namespace, name);
  }

  requester(): Promise<Requester> {
    return this.api.requester();
  }

  async createRestart(cr: ContainerRestart): Promise<ContainerRestart> {
    return this.lay('cr', await this.api.createRestart(cr));
  }

  async listPrewarms(set: SidecarSet): Promise<ImagePrewarm[]> {
    const sel = { [SIDECARSET_LABEL]: set.metadata.uid ?? '' };
    const labelSelector = `${SIDECARSET_LABEL}=${set.metadata.uid ?? ''}`;
    const spec = { path: `/apis/${FLEET_GROUP}/${FLEET_VERSION}/${IMAGE_PREWARM_PLURAL}`, list: () => this.lists.prewarms(labelSelector), labelSelector };
    const items = await this.read('pw', `pw?${labelSelector}`, spec, () => this.api.listPrewarms(set) as unknown as Promise<Obj[]>);
    return this.merged('pw', items, (o) => hasLabels(o, sel)) as unknown as ImagePrewarm[];
  }

  /** Not watched: read only while a pre-warm is under way (round.ts). */
  listNodePrewarms(): Promise<NodePrewarm[]> {
    return this.api.listNodePrewarms();
  }

  async createPrewarm(set: SidecarSet, a: SidecarPrewarmAction): Promise<ImagePrewarm> {
    return this.lay('pw', await this.api.createPrewarm(set, a));
  }

  getPrewarm(name: string): Promise<ImagePrewarm | undefined> {
    return this.api.getPrewarm(name);
  }

  async deletePrewarm(name: string, uid: string): Promise<void> {
    await this.api.deletePrewarm(name, uid);
    this.gone('pw', `/${name}`);
  }

  async writeStatus(set: SidecarSet, status: SidecarSetStatus): Promise<SidecarSet> {
    return this.lay('scs', await this.api.writeStatus(set, status));
  }
}
