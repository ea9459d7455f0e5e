// What the coordinating agent reads, kept by watches: one Follower (k8s/list-follower.ts) per thing a round
// asks for (the rollouts; per rollout its workload, revisions, pods, ContainerRestarts and pre-warm), started the
// first time a round asks and stopped when no round has asked for a while. Every change any of them hears wakes
// the coordinator (onChange), so it acts on change instead of on a timer.
//
// Reads come from a watch's cache once it has listed and while it is healthy; otherwise (the first round, a
// failed watch) straight from the API server, as do the coordinator's slow resyncs (fresh()). The coordinator
// also reads its own writes: each object a write returns is laid over the cache until the watch has caught up
// with it (or a short time has passed), so a round right after a ContainerRestart was created counts it in
// flight even before its watch event arrives, and the budget is spent once.
import type { V1ControllerRevision, V1Pod } from '../../k8s/client.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import { Follower, type FollowerDeps, type FollowSpec } from '../../k8s/list-follower.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, type ImagePrewarm, type NodePrewarm } from '../image-prewarm/types.js';
import type { AccessAnswer } from '../../k8s/access-review.js';
import type { Permission } from '../../k8s/request-permissions.js';
import type { Requester } from '../../k8s/requester.js';
import type { RolloutApi, Workload } from './rollout-api.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, ROLLOUT_LABEL, type InPlaceRollout, type InPlaceRolloutStatus } from './types.js';
import { selectorFor } from '../../k8s/label-selector.js';
import type { Obj, RolloutLists } from './rollout-lists.js';

/** A watch no round has read from for this long is stopped (ms). */
export const FEED_IDLE_MS = 120_000;
/** An object laid over a watch's cache after a write stays at most this long, whatever the watch says (ms). */
export const OVERLAY_MS = 30_000;
/** Back-off of the watches after a failure (ms). */
const FOLLOW_BACKOFF = { initialBackoffMs: 250, maxBackoffMs: 5000, deniedRetryMs: 60_000 };
export { kubeLists, type Obj, type RolloutLists } from './rollout-lists.js';

/** One watch, and whether it can be read from. */
interface Feed {
  follower: Follower<Obj>;
  /** Listed, and heard from since its last failure (a restarted watch goes on from the last version seen, with no list). */
  ok: boolean;
  usedAt: number;
}

/** An object this agent wrote, laid over the watch's cache; deleted: it is gone (as far as this agent knows). */
interface Laid {
  obj?: Obj;
  deleted: boolean;
  resourceVersion?: string;
  at: number;
}

const keyOf = (o: Obj) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
const hasLabels = (o: Obj, sel: Record<string, string>) => Object.entries(sel).every(([k, v]) => o.metadata?.labels?.[k] === v);

/** Whether resourceVersion a is at or after b (numbers, as the API server's are; unknown: no). */
function atOrAfter(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) >= BigInt(b);
}

/** The reads of a round, from watches, and the writes, passed on to the API server and read back. */
export class RolloutCache implements RolloutView {
  private readonly feeds = new Map<string, Feed>();
  /** Per kind ('pod', 'cr', 'pw', 'ipr'), by namespace/name. */
  private readonly laid = new Map<string, Map<string, Laid>>();
  private readonly listeners = new Set<() => void>();
  private direct = false;
  private warned = new Set<string>();

  constructor(
    /** The watches' requests and clock. */
    private readonly follow: FollowerDeps,
    private readonly lists: RolloutLists,
    /** Where writes, and reads that cannot come from a watch, go. */
    private readonly api: RolloutApi,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** fn is called after each change any watch heard. */
  onChange(fn: () => void): void {
    this.listeners.add(fn);
  }

  /** Until the next call, every read goes to the API server (the coordinator's resync). */
  fresh(direct: boolean): void {
    this.direct = direct;
  }

  /** Stops the watches no round read from within FEED_IDLE_MS, and forgets overlays older than OVERLAY_MS. */
  sweep(): void {
    const now = this.clock.now();
    for (const [key, f] of this.feeds) {
      if (now - f.usedAt < FEED_IDLE_MS) continue;
      this.feeds.delete(key);
      void f.follower.stop().catch(() => undefined);
    }
    for (const m of this.laid.values()) for (const [k, l] of m) if (now - l.at >= OVERLAY_MS) m.delete(k);
  }

  /** Stops every watch. */
  async stop(): Promise<void> {
    const feeds = [...this.feeds.values()];
    this.feeds.clear();
    this.listeners.clear();
    await Promise.all(feeds.map((f) => f.follower.stop().catch(() => undefined)));
  }

  // ------------------------------------------------------------------------------------------ reads

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
    this.kind('pw').set(`/${name}`, { deleted: true, at: this.clock.now() });
  }

  /** Asked of the API server every time: an answer about rights is never cached. */
  review(requester: Requester, p: Permission): Promise<AccessAnswer> {
    return this.api.review(requester, p);
  }

  // ------------------------------------------------------------------------------------------ inside

  private kind(kind: string): Map<string, Laid> {
    let m = this.laid.get(kind);
    if (!m) this.laid.set(kind, (m = new Map()));
    return m;
  }

  /** Lays what a write returned over the cache of its kind. */
  private lay(kind: string, obj: Obj): Obj {
    if (obj?.metadata) this.kind(kind).set(keyOf(obj), { obj, deleted: false, resourceVersion: obj.metadata.resourceVersion, at: this.clock.now() });
    return obj;
  }

  /**
   * The watch saw obj (or its deletion): an overlay it has caught up with goes. Resource versions are the API
   * server's one sequence, so a version at or after the write's means the watch is past it, whatever the uid; a
   * deletion seen before the write (of an earlier object of that name) is not.
   */
  private caughtUp(kind: string, obj: Obj, deleted: boolean): void {
    const m = this.laid.get(kind);
    const l = m?.get(keyOf(obj));
    if (!l) return;
    if (atOrAfter(obj.metadata?.resourceVersion, l.resourceVersion) || (deleted && l.resourceVersion === undefined)) m?.delete(keyOf(obj));
  }

  /** The items with this agent's own writes laid over them. */
  private merged(kind: string, items: Obj[], matches: (o: Obj) => boolean): Obj[] {
    const m = this.laid.get(kind);
    if (!m || m.size === 0) return items;
    const byKey = new Map(items.map((o) => [keyOf(o), o]));
    for (const [key, l] of m) {
      const cur = byKey.get(key);
      if (cur && atOrAfter(cur.metadata?.resourceVersion, l.resourceVersion)) continue;
      if (l.deleted) byKey.delete(key);
      else if (l.obj && matches(l.obj)) byKey.set(key, l.obj);
    }
    return [...byKey.values()];
  }

  /** The items of a feed, started on first use; from the API server while it cannot be read from. */
  private async read(kind: string, key: string, spec: FollowSpec<Obj>, direct: () => Promise<Obj[]>): Promise<Obj[]> {
    let f = this.feeds.get(key);
    if (!f) {
      const feed: Feed = {
        ok: false,
        usedAt: this.clock.now(),
        follower: new Follower<Obj>(this.follow, { ...spec, ...FOLLOW_BACKOFF }, {
          add: (o) => this.caughtUp(kind, o, false),
          update: (o) => this.caughtUp(kind, o, false),
          delete: (o) => this.caughtUp(kind, o, true),
          changed: () => {
            feed.ok = true;
            this.warned.delete(key);
            for (const l of this.listeners) l();
          },
          failed: (fl) => {
            feed.ok = false;
            if (this.warned.has(key)) return;
            this.warned.add(key);
            this.log.info('a watch of the rollout coordinator failed; reading from the API server meanwhile', { watch: spec.path, status: fl.status, retryInMs: fl.retryInMs });
          },
        }),
      };
      this.feeds.set(key, (f = feed));
      feed.follower.start();
    }
    f.usedAt = this.clock.now();
    if (!this.direct && f.ok && f.follower.hasSynced()) return f.follower.list();
    return direct();
  }
}

/** What the coordinator reads through while it leads: a RolloutCache, or the API server itself (no watches). */
export interface RolloutView extends RolloutApi {
  /** fn is called after each change heard (never, without watches). */
  onChange(fn: () => void): void;
  /** Until the next call, whether every read goes to the API server. */
  fresh(direct: boolean): void;
  /** Lets go of what no round needs any more. */
  sweep(): void;
  stop(): Promise<void>;
}

/** The API server itself as a view: every read is a request, and no change is heard (rounds run on the resync). */
export function directView(api: RolloutApi): RolloutView {
  return Object.assign(Object.create(api) as RolloutApi, { onChange: () => undefined, fresh: () => undefined, sweep: () => undefined, stop: async () => undefined });
}
