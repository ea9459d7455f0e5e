// LeaseApi (lease-election.ts) on a real API server: one named coordination.k8s.io/v1 Lease in one namespace.
import * as k8s from './client.js';
import { apiStatusCode, isConflict, kubeCall, kubeError } from './api-error.js';
import { followerDeps, followList, type FollowerDeps, type FollowFailure } from './list-follower.js';
import type { Clock } from '../clock.js';
import type { ElectionLease, LeaseApi, LeaseWatch } from './lease-election.js';

/** The label every election Lease carries: its election's name. */
export const ELECTION_LABEL = 'inplace-agent.io/election';

const timeMs = (t: unknown): number => (t ? new Date(t as string).getTime() : 0);

function toLease(l: k8s.V1Lease): ElectionLease {
  return {
    name: l.metadata?.name ?? '',
    holder: l.spec?.holderIdentity ?? '',
    renewMs: timeMs(l.spec?.renewTime ?? l.spec?.acquireTime),
    acquireMs: timeMs(l.spec?.acquireTime),
    durationSeconds: l.spec?.leaseDurationSeconds ?? 0,
    resourceVersion: l.metadata?.resourceVersion ?? '',
  };
}

/** The Lease `name` in `namespace` of the API server of kc; election names it in the Lease's label. */
export class KubeLease implements LeaseApi {
  private readonly coord: k8s.CoordinationV1Api;
  private readonly follower: FollowerDeps;

  constructor(
    kc: k8s.KubeConfig,
    clock: Clock,
    private readonly namespace: string,
    readonly name: string,
    private readonly election: string,
  ) {
    this.coord = kc.makeApiClient(k8s.CoordinationV1Api);
    this.follower = followerDeps(kc, clock);
  }

  async get(): Promise<ElectionLease | undefined> {
    try {
      return toLease(await this.coord.readNamespacedLease({ name: this.name, namespace: this.namespace }));
    } catch (err) {
      if (apiStatusCode(err) === 404) return undefined;
      throw kubeError(err, `read Lease ${this.namespace}/${this.name}`);
    }
  }

  follow(onLease: (lease: ElectionLease | undefined) => void, onError: (f: FollowFailure) => void): LeaseWatch {
    const fieldSelector = `metadata.name=${this.name}`;
    const path = `/apis/coordination.k8s.io/v1/namespaces/${this.namespace}/leases`;
    const list = () => this.coord.listNamespacedLease({ namespace: this.namespace, fieldSelector });
    return followList(this.follower, { path, list, fieldSelector }, (items) => onLease(items[0] ? toLease(items[0]) : undefined), onError);
  }

  async create(holder: string, durationSeconds: number, nowMs: number): Promise<ElectionLease> {
    const body: k8s.V1Lease = {
      metadata: { name: this.name, namespace: this.namespace, labels: { [ELECTION_LABEL]: this.election } },
      spec: { holderIdentity: holder, leaseDurationSeconds: durationSeconds, acquireTime: new k8s.V1MicroTime(nowMs), renewTime: new k8s.V1MicroTime(nowMs) },
    };
    return toLease(await kubeCall(`create Lease ${this.namespace}/${this.name}`, () => this.coord.createNamespacedLease({ namespace: this.namespace, body })));
  }

  async update(lease: ElectionLease, holder: string, nowMs: number): Promise<ElectionLease> {
    const body: k8s.V1Lease = {
      // Replace sends the whole object: the acquire time is carried over while the holder stays.
      metadata: { name: this.name, namespace: this.namespace, resourceVersion: lease.resourceVersion, labels: { [ELECTION_LABEL]: this.election } },
      spec: {
        holderIdentity: holder,
        leaseDurationSeconds: lease.durationSeconds,
        acquireTime: new k8s.V1MicroTime(holder === lease.holder && lease.acquireMs ? lease.acquireMs : nowMs),
        renewTime: new k8s.V1MicroTime(nowMs),
      },
    };
    return toLease(await kubeCall(`renew Lease ${this.namespace}/${this.name}`, () => this.coord.replaceNamespacedLease({ name: this.name, namespace: this.namespace, body })));
  }

  async delete(lease: ElectionLease): Promise<boolean> {
    try {
      await this.coord.deleteNamespacedLease({ name: this.name, namespace: this.namespace, body: { preconditions: { resourceVersion: lease.resourceVersion } } });
      return true;
    } catch (err) {
      if (apiStatusCode(err) === 404) return true;
      if (isConflict(err)) return false;
      throw kubeError(err, `delete Lease ${this.namespace}/${this.name}`);
    }
  }
}
