// What the fleet pre-warm needs from the Kubernetes API, as one small interface, and its implementation on
// @kubernetes/client-node. Every call here is one API request, so the requests an agent makes can be counted.
// Every method throws AgentError (kubeError), which keeps the HTTP status for httpStatus.
import * as k8s from '../../k8s/client.js';
import { apiStatusCode, isConflict, kubeCall, kubeError, type KubeCaller } from '../../k8s/api-error.js';
import { followerDeps, followList, type FollowerDeps, type FollowFailure } from '../../k8s/list-follower.js';
import type { Clock } from '../../clock.js';
import { createHash } from 'node:crypto';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, NODE_PREWARM_PLURAL, PREWARM_LABEL, TURN_LABEL, type ImagePrewarm, type ImagePrewarmStatus, type NodePrewarm } from './types.js';
import { selectorFor } from '../../k8s/label-selector.js';

/** A slot Lease as the fleet sees it. */
export interface SlotLease {
  name: string;
  /** The ImagePrewarm whose slot this is. */
  prewarm: string;
  holder: string;
  /** ms since the epoch of the last renewal (or acquisition). */
  renewMs: number;
  acquireMs: number;
  durationSeconds: number;
  resourceVersion: string;
}

/** A running watch (of the ImagePrewarms, or of one prewarm's slot Leases). */
export interface PrewarmFollower {
  stop(): Promise<void>;
}

/** The fleet's view of the API server. `undefined` from a get means 404. */
export interface FleetApi {
  listPrewarms(): Promise<ImagePrewarm[]>;
  /**
   * Lists the ImagePrewarms, then watches them (one request, then a long-lived watch), calling onList with
   * every object after each change (never after a failed list); on a failure calls onError and lists and
   * watches again after a back-off (1 s doubling to 30 s; 5 min after a 403 or 404), re-listing after a 410.
   */
  followPrewarms(onList: (items: ImagePrewarm[]) => void, onError: (f: FollowFailure) => void): PrewarmFollower;
  writePrewarmStatus(name: string, resourceVersion: string, status: ImagePrewarmStatus, prewarm: ImagePrewarm): Promise<void>;
  /** Names of the nodes whose labels match every pair of the selector. */
  nodesMatching(selector: Record<string, string>): Promise<string[]>;
  /** Node names of the pods in the namespace whose labels match (pods not yet scheduled or finished are left out). */
  nodesOfPods(namespace: string, matchLabels: Record<string, string>): Promise<string[]>;
  getNodePrewarm(node: string): Promise<NodePrewarm | undefined>;
  listNodePrewarms(): Promise<NodePrewarm[]>;
  createNodePrewarm(obj: NodePrewarm): Promise<NodePrewarm>;
  /** Replaces the status; throws an Aborted AgentError (status 409) when resourceVersion is stale. Returns the new object. */
  writeNodePrewarmStatus(obj: NodePrewarm): Promise<NodePrewarm>;
  listSlots(namespace: string, prewarm: string): Promise<SlotLease[]>;
  /**
   * Lists the prewarm's slot Leases, then watches them (one request, then a long-lived watch), calling onList
   * with every slot after each change; restarts like followPrewarms.
   */
  followSlots(namespace: string, prewarm: string, onList: (leases: SlotLease[]) => void, onError: (f: FollowFailure) => void): PrewarmFollower;
  /**
   * Lists the slot Leases (of every prewarm) whose turn label names node, then watches them, calling onList with
   * all of them after each change; restarts like followPrewarms. Without node: every slot Lease with a turn
   * label (for one process that serves many nodes, as the benchmark does).
   */
  followTurns(namespace: string, node: string | undefined, onList: (leases: SlotLease[]) => void, onError: (f: FollowFailure) => void): PrewarmFollower;
  /** Creates the slot Lease held by holder; throws 409 when it exists. */
  createSlot(namespace: string, prewarm: string, name: string, holder: string, durationSeconds: number, nowMs: number): Promise<SlotLease>;
  /**
   * Writes holder (and its turn label) and renewal time over the Lease at resourceVersion; throws 409 when
   * someone was first. A new holder is how a slot is handed on.
   */
  updateSlot(namespace: string, lease: SlotLease, holder: string, nowMs: number): Promise<SlotLease>;
  /**
   * Deletes the Lease if it is still at resourceVersion (a precondition). True when it is gone (deleted, or
   * already absent); false on 409 (it changed since it was read).
   */
  deleteSlot(namespace: string, lease: SlotLease): Promise<boolean>;
  /** A Secret's data (base64 values), or undefined when absent. */
  getSecretData(namespace: string, name: string): Promise<Record<string, string> | undefined>;
}

/** HTTP status of an error from the API client (0 when it is not an HTTP answer). */
export function httpStatus(err: unknown): number {
  return apiStatusCode(err) ?? 0;
}

/** The turn label's value for a node: node names can be longer than a label value may be. */
export function turnKey(node: string): string {
  return createHash('sha256').update(node).digest('hex').slice(0, 40);
}

const timeMs = (t: unknown): number => (t ? new Date(t as string).getTime() : 0);

function toSlot(l: k8s.V1Lease): SlotLease {
  return {
    name: l.metadata?.name ?? '',
    prewarm: l.metadata?.labels?.[PREWARM_LABEL] ?? '',
    holder: l.spec?.holderIdentity ?? '',
    renewMs: timeMs(l.spec?.renewTime ?? l.spec?.acquireTime),
    acquireMs: timeMs(l.spec?.acquireTime),
    durationSeconds: l.spec?.leaseDurationSeconds ?? 0,
    resourceVersion: l.metadata?.resourceVersion ?? '',
  };
}

/** MicroTime as the Lease API wants it: RFC 3339 with six fractional digits. */
function microTime(ms: number): Date {
  return new k8s.V1MicroTime(ms);
}

/** FleetApi on a real API server. */
export class KubeFleetApi implements FleetApi {
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;
  private readonly coord: k8s.CoordinationV1Api;
  private readonly follow: FollowerDeps;

  /** The follows of prewarms and slots restart on clock; caller says whose credentials kc holds (see kubeError). */
  constructor(kc: k8s.KubeConfig, clock: Clock, private readonly caller: KubeCaller = 'agent') {
    this.follow = followerDeps(kc, clock);
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.coord = kc.makeApiClient(k8s.CoordinationV1Api);
  }

  /** kubeCall as this client's caller. */
  private call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return kubeCall(what, fn, this.caller);
  }

  async listPrewarms(): Promise<ImagePrewarm[]> {
    const r = (await this.call('list ImagePrewarms', () => this.custom.listClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL }))) as { items?: ImagePrewarm[] };
    return r.items ?? [];
  }

  followPrewarms(onList: (items: ImagePrewarm[]) => void, onError: (f: FollowFailure) => void): PrewarmFollower {
    const path = `/apis/${FLEET_GROUP}/${FLEET_VERSION}/${IMAGE_PREWARM_PLURAL}`;
    const list = () => this.custom.listClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL }) as Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>;
    return followList(this.follow, { path, list }, (items) => onList(items as unknown as ImagePrewarm[]), onError);
  }

  followSlots(namespace: string, prewarm: string, onList: (leases: SlotLease[]) => void, onError: (f: FollowFailure) => void): PrewarmFollower {
    const labelSelector = `${PREWARM_LABEL}=${prewarm}`;
    const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    const list = () => this.coord.listNamespacedLease({ namespace, labelSelector });
    return followList(this.follow, { path, list, labelSelector }, (items) => onList(items.map(toSlot)), onError);
  }

  followTurns(namespace: string, node: string | undefined, onList: (leases: SlotLease[]) => void, onError: (f: FollowFailure) => void): PrewarmFollower {
    const labelSelector = node === undefined ? TURN_LABEL : `${TURN_LABEL}=${turnKey(node)}`;
    const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    const list = () => this.coord.listNamespacedLease({ namespace, labelSelector });
    return followList(this.follow, { path, list, labelSelector }, (items) => onList(items.map(toSlot)), onError);
  }

  async writePrewarmStatus(name: string, resourceVersion: string, status: ImagePrewarmStatus, prewarm: ImagePrewarm): Promise<void> {
    const body = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'ImagePrewarm', metadata: { name, resourceVersion }, spec: prewarm.spec, status };
    await this.call(`write status of ImagePrewarm ${name}`, () => this.custom.replaceClusterCustomObjectStatus({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, name, body }));
  }

  async nodesMatching(selector: Record<string, string>): Promise<string[]> {
    // resourceVersion 0: served from the API server's watch cache, not read through to etcd.
    const r = await this.call('list nodes', () => this.core.listNode({ labelSelector: selectorFor(selector), resourceVersion: '0' }));
    return r.items.map((n) => n.metadata?.name ?? '').filter(Boolean);
  }

  async nodesOfPods(namespace: string, matchLabels: Record<string, string>): Promise<string[]> {
    const r = await this.call(`list pods in ${namespace}`, () => this.core.listNamespacedPod({ namespace, labelSelector: selectorFor(matchLabels), resourceVersion: '0' }));
    return r.items
      .filter((p) => p.spec?.nodeName && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed' && !p.metadata?.deletionTimestamp)
      .map((p) => p.spec?.nodeName ?? '');
  }

  async getNodePrewarm(node: string): Promise<NodePrewarm | undefined> {
    try {
      return (await this.custom.getClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, name: node })) as NodePrewarm;
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw kubeError(err, `get NodePrewarm ${node}`, this.caller);
    }
  }

  async listNodePrewarms(): Promise<NodePrewarm[]> {
    const r = (await this.call('list NodePrewarms', () => this.custom.listClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL }))) as { items?: NodePrewarm[] };
    return r.items ?? [];
  }

  async createNodePrewarm(obj: NodePrewarm): Promise<NodePrewarm> {
    const body = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'NodePrewarm', ...obj };
    return (await this.call(`create NodePrewarm ${obj.metadata.name}`, () => this.custom.createClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, body }))) as NodePrewarm;
  }

  async writeNodePrewarmStatus(obj: NodePrewarm): Promise<NodePrewarm> {
    const body = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'NodePrewarm', ...obj };
    return (await this.call(`write status of NodePrewarm ${obj.metadata.name}`, () =>
      this.custom.replaceClusterCustomObjectStatus({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL, name: obj.metadata.name, body }),
    )) as NodePrewarm;
  }

  async listSlots(namespace: string, prewarm: string): Promise<SlotLease[]> {
    const r = await this.call(`list the slot Leases of ${prewarm}`, () => this.coord.listNamespacedLease({ namespace, labelSelector: `${PREWARM_LABEL}=${prewarm}` }));
    return r.items.map(toSlot);
  }

  async createSlot(namespace: string, prewarm: string, name: string, holder: string, durationSeconds: number, nowMs: number): Promise<SlotLease> {
    const body: k8s.V1Lease = {
      metadata: { name, namespace, labels: { [PREWARM_LABEL]: prewarm, [TURN_LABEL]: turnKey(holder) } },
      spec: { holderIdentity: holder, leaseDurationSeconds: durationSeconds, acquireTime: microTime(nowMs), renewTime: microTime(nowMs) },
    };
    return toSlot(await this.call(`create slot Lease ${namespace}/${name}`, () => this.coord.createNamespacedLease({ namespace, body })));
  }

  async updateSlot(namespace: string, lease: SlotLease, holder: string, nowMs: number): Promise<SlotLease> {
    const body: k8s.V1Lease = {
      // Replace sends the whole object: the label and the acquire time are carried over.
      metadata: { name: lease.name, namespace, resourceVersion: lease.resourceVersion, labels: { [PREWARM_LABEL]: lease.prewarm, [TURN_LABEL]: turnKey(holder) } },
      spec: {
        holderIdentity: holder,
        leaseDurationSeconds: lease.durationSeconds,
        acquireTime: microTime(holder === lease.holder && lease.acquireMs ? lease.acquireMs : nowMs),
        renewTime: microTime(nowMs),
      },
    };
    return toSlot(await this.call(`renew slot Lease ${namespace}/${lease.name}`, () => this.coord.replaceNamespacedLease({ name: lease.name, namespace, body })));
  }

  async deleteSlot(namespace: string, lease: SlotLease): Promise<boolean> {
    try {
      await this.coord.deleteNamespacedLease({ name: lease.name, namespace, body: { preconditions: { resourceVersion: lease.resourceVersion } } });
      return true;
    } catch (err) {
      const s = httpStatus(err);
      if (s === 404) return true;
      if (isConflict(err)) return false;
      throw kubeError(err, `delete slot Lease ${namespace}/${lease.name}`, this.caller);
    }
  }

  async getSecretData(namespace: string, name: string): Promise<Record<string, string> | undefined> {
    try {
      const s = await this.core.readNamespacedSecret({ name, namespace });
      return s.data ?? {};
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw kubeError(err, `read Secret ${namespace}/${name}`, this.caller);
    }
  }
}
