// What the rollout coordinator and `inplacectl rollout` read and write through the API server, behind one small
// interface, on @kubernetes/client-node. Every method throws AgentError (kubeError); a get answers undefined
// for a 404.
import * as k8s from '../../k8s/client.js';
import { apiStatusCode, kubeCall, kubeError, type KubeCaller } from '../../k8s/api-error.js';
import { SubjectAccessReviewer, type AccessAnswer, type AccessReviewer } from '../../k8s/access-review.js';
import type { Permission } from '../../k8s/request-permissions.js';
import { selfRequester, type Requester } from '../../k8s/requester.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, NODE_PREWARM_PLURAL, type ImagePrewarm, type NodePrewarm } from '../image-prewarm/types.js';
import { IPR_GROUP, IPR_KIND, IPR_PLURAL, IPR_VERSION, ROLLOUT_LABEL, type InPlaceRollout, type InPlaceRolloutStatus } from './types.js';
import { selectorFor } from '../../k8s/label-selector.js';

/** The field manager the coordinator's writes are recorded under. */
const FIELD_MANAGER = 'inplace-agent-rollout';

/** A StatefulSet or DaemonSet. */
export type Workload = { kind: 'StatefulSet'; obj: k8s.V1StatefulSet } | { kind: 'DaemonSet'; obj: k8s.V1DaemonSet };

/** The rollout's view of the API server; as an AccessReviewer, it asks whether a rollout's requester holds a permission. */
export interface RolloutApi extends AccessReviewer {
  listRollouts(namespace?: string): Promise<InPlaceRollout[]>;
  getRollout(namespace: string, name: string): Promise<InPlaceRollout | undefined>;
  /** Merge-patches the spec (pause, resume), recording this client's user as the requester (who writes the spec asks for the rollout). */
  patchRolloutSpec(namespace: string, name: string, spec: Partial<InPlaceRollout['spec']>): Promise<InPlaceRollout>;
  /** Replaces the status at the object's resourceVersion (409 when it moved on). */
  writeRolloutStatus(rollout: InPlaceRollout, status: InPlaceRolloutStatus): Promise<InPlaceRollout>;
  getWorkload(namespace: string, kind: 'StatefulSet' | 'DaemonSet', name: string): Promise<Workload | undefined>;
  listRevisions(namespace: string, selector: Record<string, string>): Promise<k8s.V1ControllerRevision[]>;
  listPods(namespace: string, selector: Record<string, string>): Promise<k8s.V1Pod[]>;
  /** The ContainerRestarts carrying the rollout's label. */
  listRestarts(namespace: string, rolloutUid: string): Promise<ContainerRestart[]>;
  /** Creates it, with the requester it carries (the rollout's), and answers it as created; a 409 (it exists) throws Aborted. */
  createRestart(cr: ContainerRestart): Promise<ContainerRestart>;
  /** The ContainerRestart of that name, whoever owns it; undefined when there is none. */
  getRestart(namespace: string, name: string): Promise<ContainerRestart | undefined>;
  /** Patches the pod's labels and annotations (null removes), only if it is still the pod with this uid; answers the pod as patched. */
  patchPodMetadata(namespace: string, name: string, uid: string, labels: Record<string, string | null>, annotations: Record<string, string | null>): Promise<k8s.V1Pod>;
  /** Deletes the pod if it is still the one with this uid; answers the pod as the deletion left it. */
  deletePod(namespace: string, name: string, uid: string): Promise<k8s.V1Pod>;
  listPrewarms(rolloutUid: string): Promise<ImagePrewarm[]>;
  /** Every node's pre-warm record (deploy/optional/fleet-prewarm-rbac.yaml lets the agents list them). */
  listNodePrewarms(): Promise<NodePrewarm[]>;
  /** Creates it and answers it as created; a 409 throws Aborted. */
  createPrewarm(pw: ImagePrewarm & { metadata: { labels?: Record<string, string> } }): Promise<ImagePrewarm>;
  /** The ImagePrewarm of that name, whoever owns it; undefined when there is none. */
  getPrewarm(name: string): Promise<ImagePrewarm | undefined>;
  /** Deletes it if it is still the object with this uid (gone already is fine). */
  deletePrewarm(name: string, uid: string): Promise<void>;
}

async function orUndefined<T>(what: string, fn: () => Promise<T>, caller: KubeCaller): Promise<T | undefined> {
  try {
    return await fn();
  } catch (err) {
    if (apiStatusCode(err) === 404) return undefined;
    throw kubeError(err, what, caller);
  }
}

/** RolloutApi on a real API server. */
export class KubeRolloutApi implements RolloutApi {
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;
  private readonly apps: k8s.AppsV1Api;
  /** This client's own identity, written as the requester of the spec patches it sends (see requester.ts). */
  private readonly self: () => Promise<Requester>;
  private readonly reviewer: SubjectAccessReviewer;

  /** caller says whose credentials kc holds (see kubeError). */
  constructor(
    kc: k8s.KubeConfig,
    private readonly caller: KubeCaller = 'agent',
  ) {
    let self: Promise<Requester> | undefined;
    // Asked once; a failed question is asked again next time.
    this.self = () =>
      (self ??= selfRequester(kc, caller).catch((err: unknown) => {
        self = undefined;
        throw err;
      }));
    this.reviewer = new SubjectAccessReviewer(kc, caller);
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.apps = kc.makeApiClient(k8s.AppsV1Api);
  }

  /** kubeCall as this client's caller. */
  private call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return kubeCall(what, fn, this.caller);
  }

  /** orUndefined as this client's caller. */
  private orUndefined<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    return orUndefined(what, fn, this.caller);
  }

  private base(namespace: string) {
    return { group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace };
  }

  async listRollouts(namespace?: string): Promise<InPlaceRollout[]> {
    const r = await this.call('list InPlaceRollouts', () =>
      namespace ? this.custom.listNamespacedCustomObject(this.base(namespace)) : this.custom.listClusterCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL }),
    );
    return ((r as { items?: InPlaceRollout[] }).items ?? []);
  }

  getRollout(namespace: string, name: string): Promise<InPlaceRollout | undefined> {
    return this.orUndefined(`get InPlaceRollout ${namespace}/${name}`, async () => (await this.custom.getNamespacedCustomObject({ ...this.base(namespace), name })) as InPlaceRollout);
  }

  review(requester: Requester, p: Permission): Promise<AccessAnswer> {
    return this.reviewer.review(requester, p);
  }

  async patchRolloutSpec(namespace: string, name: string, spec: Partial<InPlaceRollout['spec']>): Promise<InPlaceRollout> {
    // Where deploy/admission-requester.yaml is installed it writes the same; where only the validating policy is,
    // a spec written by someone other than its recorded requester would be refused without this.
    spec = { ...spec, requester: await this.self() };
    return this.call(`patch InPlaceRollout ${namespace}/${name}`, async () =>
      (await this.custom.patchNamespacedCustomObject({ ...this.base(namespace), name, body: { spec }, fieldManager: 'inplacectl' }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch))) as InPlaceRollout,
    );
  }

  async writeRolloutStatus(rollout: InPlaceRollout, status: InPlaceRolloutStatus): Promise<InPlaceRollout> {
    const { name, namespace = 'default', resourceVersion } = rollout.metadata;
    const body = { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: IPR_KIND, metadata: { name, namespace, resourceVersion }, spec: rollout.spec, status };
    return this.call(`write status of InPlaceRollout ${namespace}/${name}`, async () => (await this.custom.replaceNamespacedCustomObjectStatus({ ...this.base(namespace), name, body })) as InPlaceRollout);
  }

  getWorkload(namespace: string, kind: 'StatefulSet' | 'DaemonSet', name: string): Promise<Workload | undefined> {
    // A DaemonSet as the API server sends it, not through the typed client, which drops fields it does not know:
    // its spec.template is compared whole with its revisions' (revisions.ts).
    return this.orUndefined(`get ${kind} ${namespace}/${name}`, async () =>
      kind === 'StatefulSet'
        ? { kind, obj: await this.apps.readNamespacedStatefulSet({ namespace, name }) }
        : { kind, obj: (await this.custom.getNamespacedCustomObject({ group: 'apps', version: 'v1', plural: 'daemonsets', namespace, name })) as k8s.V1DaemonSet },
    );
  }

  async listRevisions(namespace: string, selector: Record<string, string>): Promise<k8s.V1ControllerRevision[]> {
    return (await this.call(`list ControllerRevisions in ${namespace}`, () => this.apps.listNamespacedControllerRevision({ namespace, labelSelector: selectorFor(selector) }))).items;
  }

  async listPods(namespace: string, selector: Record<string, string>): Promise<k8s.V1Pod[]> {
    return (await this.call(`list pods in ${namespace}`, () => this.core.listNamespacedPod({ namespace, labelSelector: selectorFor(selector) }))).items;
  }

  async listRestarts(namespace: string, rolloutUid: string): Promise<ContainerRestart[]> {
    const r = await this.call(`list ContainerRestarts in ${namespace}`, () =>
      this.custom.listNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace, labelSelector: `${ROLLOUT_LABEL}=${rolloutUid}` }),
    );
    return (r as { items?: ContainerRestart[] }).items ?? [];
  }

  async createRestart(cr: ContainerRestart): Promise<ContainerRestart> {
    const namespace = cr.metadata.namespace ?? 'default';
    return (await this.call(`create ContainerRestart ${namespace}/${cr.metadata.name ?? ''}`, () =>
      this.custom.createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace, body: cr, fieldManager: FIELD_MANAGER }),
    )) as ContainerRestart;
  }

  getRestart(namespace: string, name: string): Promise<ContainerRestart | undefined> {
    return this.orUndefined(`get ContainerRestart ${namespace}/${name}`, async () => (await this.custom.getNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace, name })) as ContainerRestart);
  }

  async patchPodMetadata(namespace: string, name: string, uid: string, labels: Record<string, string | null>, annotations: Record<string, string | null>): Promise<k8s.V1Pod> {
    // The uid in the patch is a precondition: a pod recreated under the same name is refused (409).
    const metadata: Record<string, unknown> = { uid };
    if (Object.keys(labels).length) metadata.labels = labels;
    if (Object.keys(annotations).length) metadata.annotations = annotations;
    return this.call(`relabel pod ${namespace}/${name}`, () =>
      this.core.patchNamespacedPod({ namespace, name, body: { metadata }, fieldManager: FIELD_MANAGER }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch)),
    );
  }

  async deletePod(namespace: string, name: string, uid: string): Promise<k8s.V1Pod> {
    return this.call(`delete pod ${namespace}/${name}`, () => this.core.deleteNamespacedPod({ namespace, name, body: { preconditions: { uid } } }));
  }

  async listPrewarms(rolloutUid: string): Promise<ImagePrewarm[]> {
    const r = await this.call('list ImagePrewarms', () => this.custom.listClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, labelSelector: `${ROLLOUT_LABEL}=${rolloutUid}` }));
    return (r as { items?: ImagePrewarm[] }).items ?? [];
  }

  async listNodePrewarms(): Promise<NodePrewarm[]> {
    const r = await this.call('list NodePrewarms', () => this.custom.listClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL }));
    return (r as { items?: NodePrewarm[] }).items ?? [];
  }

  async createPrewarm(pw: ImagePrewarm): Promise<ImagePrewarm> {
    const body = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'ImagePrewarm', ...pw };
    return (await this.call(`create ImagePrewarm ${pw.metadata.name}`, () =>
      this.custom.createClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, body, fieldManager: FIELD_MANAGER }),
    )) as ImagePrewarm;
  }

  getPrewarm(name: string): Promise<ImagePrewarm | undefined> {
    return this.orUndefined(`get ImagePrewarm ${name}`, async () => (await this.custom.getClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, name })) as ImagePrewarm);
  }

  async deletePrewarm(name: string, uid: string): Promise<void> {
    // The uid is a precondition: an object made under the same name since it was listed is not deleted (409).
    await this.orUndefined(`delete ImagePrewarm ${name}`, () => this.custom.deleteClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, name, body: { preconditions: { uid } } }));
  }
}
