// What the rollout coordinator reads, kept by watches that read its own writes (kit/watch-cache.ts): one watch
// per thing a round asks for (the rollouts; per rollout its workload, revisions, pods, ContainerRestarts and
// pre-warm). This file names the reads and writes; the kit keeps the watches and the overlays.
import type { V1ControllerRevision, V1Pod } from '../../k8s/client.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { FollowerDeps } from '../../k8s/list-follower.js';
import { directView as directApi, hasLabels, WatchCache, type CoordinatorView } from '../kit/watch-cache.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, type ImagePrewarm, type NodePrewarm } from '../image-prewarm/types.js';
import type { AccessAnswer } from '../../k8s/access-review.js';
import type { Permission } from '../../k8s/request-permissions.js';
import type { Requester } from '../../k8s/requester.js';
import type { RolloutApi, Workload } from './rollout-api.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, ROLLOUT_LABEL, type InPlaceRollout, type InPlaceRolloutStatus } from './types.js';
import { selectorFor } from '../../k8s/label-selector.js';
import type { Obj, RolloutLists } from './rollout-lists.js';

export { kubeLists, type Obj, type RolloutLists } from './rollout-lists.js';

/** The reads of a round, from watches, and the writes, passed on to the API server and read back. */
export class RolloutCache extends WatchCache implements RolloutView {
  constructor(
    /** The watches' requests and clock. */
    follow: FollowerDeps,
    private readonly lists: RolloutLists,
    /** Where writes, and reads that cannot come from a watch, go. */
    private readonly api: RolloutApi,
    clock: Clock,
    log: Logger,
  ) {
    super(follow, clock, log, 'the rollout coordinator');
  }

  async listRollouts(namespace?: string): Promise<InPlaceRollout[]> {
    const path = namespace ? `/apis/${IPR_GROUP}/${IPR_VERSION}/namespaces/${namespace}/${IPR_PLURAL}` : `/apis/${IPR_GROUP}/${IPR_VERSION}/${IPR_PLURAL}`;
    const list = () => this.lists.rollouts(namespace);
    const items = await this.read('ipr', `ipr:${namespace ?? ''}`, { path, list }, () => this.api.listRollouts(namespace) as Promise<Obj[]>);
    return this.merged('ipr', items, () => true) as InPlaceRollout[];
  }

  getRollout(namespace: string, name: string): Promise<InPlaceRollout | undefined> {
    return this.api.getRollout(namespace, name);
  }

  async getWorkload(namespace: string, kind: 'StatefulSet' | 'DaemonSet', name: string): Promise<Workload | undefined> {
    const fieldSelector = `metadata.name=${name}`;
    const plural = kind === 'StatefulSet' ? 'statefulsets' : 'daemonsets';
    const list = () => this.lists.workload(namespace, kind, fieldSelector);
    const direct = async () => {
      const w = await this.api.getWorkload(namespace, kind, name);
      return w ? [w.obj as Obj] : [];
    };
    const [obj] = await this.read('workload', `${plural}:${namespace}/${name}`, { path: `/apis/apps/v1/namespaces/${namespace}/${plural}`, list, fieldSelector }, direct);
    if (!obj) return undefined;
    return (kind === 'StatefulSet' ? { kind, obj } : { kind, obj }) as Workload;
  }

  async listRevisions(namespace: string, selector: Record<string, string>): Promise<V1ControllerRevision[]> {
    const labelSelector = selectorFor(selector);
    const list = () => this.lists.revisions(namespace, labelSelector);
    return (await this.read('rev', `rev:${namespace}?${labelSelector}`, { path: `/apis/apps/v1/namespaces/${namespace}/controllerrevisions`, list, labelSelector }, () =>
      this.api.listRevisions(namespace, selector) as Promise<Obj[]>,
    )) as V1ControllerRevision[];
  }

  async listPods(namespace: string, selector: Record<string, string>): Promise<V1Pod[]> {
    const labelSelector = selectorFor(selector);
    const list = () => this.lists.pods(namespace, labelSelector);
    const items = await this.read('pod', `pod:${namespace}?${labelSelector}`, { path: `/api/v1/namespaces/${namespace}/pods`, list, labelSelector }, () => this.api.listPods(namespace, selector) as Promise<Obj[]>);
    return this.merged('pod', items, (o) => o.metadata?.namespace === namespace && hasLabels(o, selector)) as V1Pod[];
  }

  async listRestarts(namespace: string, rolloutUid: string): Promise<ContainerRestart[]> {
    const labelSelector = `${ROLLOUT_LABEL}=${rolloutUid}`;
    const list = () => this.lists.restarts(namespace, labelSelector);
    const items = await this.read('cr', `cr:${namespace}?${labelSelector}`, { path: `/apis/${CR_GROUP}/${CR_VERSION}/namespaces/${namespace}/${CR_PLURAL}`, list, labelSelector }, () =>
      this.api.listRestarts(namespace, rolloutUid) as Promise<Obj[]>,
    );
    return this.merged('cr', items, (o) => o.metadata?.namespace === namespace && hasLabels(o, { [ROLLOUT_LABEL]: rolloutUid })) as ContainerRestart[];
  }

  async listPrewarms(rolloutUid: string): Promise<ImagePrewarm[]> {
    const labelSelector = `${ROLLOUT_LABEL}=${rolloutUid}`;
    const list = () => this.lists.prewarms(labelSelector);
    const items = await this.read('pw', `pw:${labelSelector}`, { path: `/apis/${FLEET_GROUP}/${FLEET_VERSION}/${IMAGE_PREWARM_PLURAL}`, list, labelSelector }, () => this.api.listPrewarms(rolloutUid) as unknown as Promise<Obj[]>);
    return this.merged('pw', items, (o) => hasLabels(o, { [ROLLOUT_LABEL]: rolloutUid })) as unknown as ImagePrewarm[];
  }

  /** Not watched: read only while a pre-warm is under way (see observe.ts). */
  listNodePrewarms(): Promise<NodePrewarm[]> {
    return this.api.listNodePrewarms();
  }

  // ------------------------------------------------------------------------------------------ writes

  async patchRolloutSpec(namespace: string, name: string, spec: Partial<InPlaceRollout['spec']>): Promise<InPlaceRollout> {
    return this.lay('ipr', (await this.api.patchRolloutSpec(namespace, name, spec)) as Obj) as InPlaceRollout;
  }

  async writeRolloutStatus(rollout: InPlaceRollout, status: InPlaceRolloutStatus): Promise<InPlaceRollout> {
    return this.lay('ipr', (await this.api.writeRolloutStatus(rollout, status)) as Obj) as InPlaceRollout;
  }

  async createRestart(cr: ContainerRestart): Promise<ContainerRestart> {
    return this.lay('cr', (await this.api.createRestart(cr)) as Obj) as ContainerRestart;
  }

  async patchPodMetadata(namespace: string, name: string, uid: string, labels: Record<string, string | null>, annotations: Record<string, string | null>): Promise<V1Pod> {
    return this.lay('pod', (await this.api.patchPodMetadata(namespace, name, uid, labels, annotations)) as Obj) as V1Pod;
  }

  async deletePod(namespace: string, name: string, uid: string): Promise<V1Pod> {
    return this.lay('pod', (await this.api.deletePod(namespace, name, uid)) as Obj) as V1Pod;
  }

  async createPrewarm(pw: ImagePrewarm & { metadata: { labels?: Record<string, string> } }): Promise<ImagePrewarm> {
    return this.lay('pw', (await this.api.createPrewarm(pw)) as unknown as Obj) as unknown as ImagePrewarm;
  }

  /** Asked of the API server (as getPrewarm is): read only after a create found the name taken. */
  getRestart(namespace: string, name: string): Promise<ContainerRestart | undefined> {
    return this.api.getRestart(namespace, name);
  }

  getPrewarm(name: string): Promise<ImagePrewarm | undefined> {
    return this.api.getPrewarm(name);
  }

  async deletePrewarm(name: string, uid: string): Promise<void> {
    await this.api.deletePrewarm(name, uid);
    this.gone('pw', `/${name}`);
  }

  /** Asked of the API server every time: an answer about rights is never cached. */
  review(requester: Requester, p: Permission): Promise<AccessAnswer> {
    return this.api.review(requester, p);
  }
}

/** What the coordinator reads through while it leads: a RolloutCache, or the API server itself (no watches). */
export type RolloutView = RolloutApi & CoordinatorView;

/** The API server itself as a view: every read is a request, and no change is heard (rounds run on the resync). */
export const directView = (api: RolloutApi): RolloutView => directApi(api);
