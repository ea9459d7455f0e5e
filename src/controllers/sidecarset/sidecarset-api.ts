// What the SidecarSet coordinator reads and writes on the API server. Reads answer the objects as they are: which
// of them are the SidecarSet's own is decided by their owner (ownership.ts), never by the label a list is
// narrowed by. Every method throws AgentError (kubeError).
import * as k8s from '../../k8s/client.js';
import { apiStatusCode, kubeCall } from '../../k8s/api-error.js';
import { selfRequester, type Requester } from '../../k8s/requester.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, NODE_PREWARM_PLURAL, type ImagePrewarm, type NodePrewarm } from '../image-prewarm/types.js';
import { SIDECARSET_LABEL } from './ownership.js';
import { prewarmObject, type SidecarPrewarmAction } from './prewarm.js';
import { selectorString } from './selector.js';
import { SCS_GROUP, SCS_KIND, SCS_PLURAL, SCS_VERSION, type SidecarSet, type SidecarSetStatus } from './types.js';

export { IMAGES_LABEL, SIDECARSET_LABEL } from './ownership.js';
export { podView, restartObject, restartView } from './views.js';

/** The ImagePrewarm resource for CustomObjectsApi calls. */
const PREWARMS = { group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL };
/** The ContainerRestart resource for CustomObjectsApi calls. */
const RESTARTS = { group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL };
/** The field manager of the coordinator's writes. */
const FIELD_MANAGER = 'inplace-agent-sidecarset';

/** The SidecarSet coordinator's view of the API server. */
export interface SidecarSetApi {
  listSidecarSets(): Promise<SidecarSet[]>;
  /** The pods of every namespace that the SidecarSet's pod selector matches. */
  listPods(set: SidecarSet): Promise<k8s.V1Pod[]>;
  /** Every namespace's labels, by name (read only for a SidecarSet with a namespaceSelector; not watched). */
  namespaceLabels(): Promise<Map<string, Record<string, string>>>;
  /** The ContainerRestarts labelled with the SidecarSet's uid, whoever made them (the caller checks the owner). */
  listRestarts(set: SidecarSet): Promise<ContainerRestart[]>;
  /** The ContainerRestart of that name, whoever owns it; undefined when there is none. */
  getRestart(namespace: string, name: string): Promise<ContainerRestart | undefined>;
  /** Who this agent is, recorded as the requester of the ContainerRestarts it creates. */
  requester(): Promise<Requester>;
  /** Creates it; a 409 (the name exists) throws Aborted. Answers the object created. */
  createRestart(cr: ContainerRestart): Promise<ContainerRestart>;
  /** The ImagePrewarms carrying the SidecarSet's label; none when the ImagePrewarm CRD is not installed. */
  listPrewarms(set: SidecarSet): Promise<ImagePrewarm[]>;
  /** Every node's pre-warm record (deploy/optional/fleet-prewarm-rbac.yaml lets the agents list them). */
  listNodePrewarms(): Promise<NodePrewarm[]>;
  /** Creates the SidecarSet's ImagePrewarm for one namespace; a 409 (it exists) throws Aborted. */
  createPrewarm(set: SidecarSet, a: SidecarPrewarmAction): Promise<ImagePrewarm>;
  /** The ImagePrewarm of that name, whoever owns it; undefined when there is none. */
  getPrewarm(name: string): Promise<ImagePrewarm | undefined>;
  /** Deletes it if it is still the object with this uid (gone already is fine). */
  deletePrewarm(name: string, uid: string): Promise<void>;
  /** Writes the status; answers the SidecarSet as stored. */
  writeStatus(set: SidecarSet, status: SidecarSetStatus): Promise<SidecarSet>;
}

/** fn's answer; undefined for a 404 (the object, or its CRD, is not there). */
async function orUndefined<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await kubeCall(what, fn);
  } catch (err) {
    if (apiStatusCode(err) === 404) return undefined;
    throw err;
  }
}

/** SidecarSetApi on the API server of kc. */
export class KubeSidecarSetApi implements SidecarSetApi {
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;
  private self?: Promise<Requester>;

  constructor(private readonly kc: k8s.KubeConfig) {
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
  }

  async listSidecarSets(): Promise<SidecarSet[]> {
    const r = await kubeCall('list SidecarSets', () => this.custom.listClusterCustomObject({ group: SCS_GROUP, version: SCS_VERSION, plural: SCS_PLURAL }));
    return (r as { items?: SidecarSet[] }).items ?? [];
  }

  async listPods(set: SidecarSet): Promise<k8s.V1Pod[]> {
    const labelSelector = selectorString(set.spec.selector);
    return (await kubeCall(`list pods for SidecarSet ${set.metadata.name}`, () => this.core.listPodForAllNamespaces({ labelSelector }))).items;
  }

  async namespaceLabels(): Promise<Map<string, Record<string, string>>> {
    const nss = await kubeCall('list namespaces', () => this.core.listNamespace());
    return new Map(nss.items.map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]));
  }

  async listRestarts(set: SidecarSet): Promise<ContainerRestart[]> {
    const r = await kubeCall(`list ContainerRestarts of SidecarSet ${set.metadata.name}`, () => this.custom.listClusterCustomObject({ ...RESTARTS, labelSelector: `${SIDECARSET_LABEL}=${set.metadata.uid ?? ''}` }));
    return (r as { items?: ContainerRestart[] }).items ?? [];
  }

  getRestart(namespace: string, name: string): Promise<ContainerRestart | undefined> {
    return orUndefined(`get ContainerRestart ${namespace}/${name}`, async () => (await this.custom.getNamespacedCustomObject({ ...RESTARTS, namespace, name })) as ContainerRestart);
  }

  requester(): Promise<Requester> {
    this.self ??= selfRequester(this.kc).catch((err: unknown) => {
      this.self = undefined;
      throw err;
    });
    return this.self;
  }

  async createRestart(cr: ContainerRestart): Promise<ContainerRestart> {
    const namespace = cr.metadata.namespace ?? '';
    return (await kubeCall(`create ContainerRestart ${namespace}/${cr.metadata.name}`, () =>
      this.custom.createNamespacedCustomObject({ ...RESTARTS, namespace, body: cr, fieldManager: FIELD_MANAGER }),
    )) as ContainerRestart;
  }

  async listPrewarms(set: SidecarSet): Promise<ImagePrewarm[]> {
    const labelSelector = `${SIDECARSET_LABEL}=${set.metadata.uid ?? ''}`;
    const r = await orUndefined(`list ImagePrewarms of SidecarSet ${set.metadata.name}`, () => this.custom.listClusterCustomObject({ ...PREWARMS, labelSelector }));
    return (r as { items?: ImagePrewarm[] } | undefined)?.items ?? [];
  }

  async listNodePrewarms(): Promise<NodePrewarm[]> {
    const r = await kubeCall('list NodePrewarms', () => this.custom.listClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL }));
    return (r as { items?: NodePrewarm[] }).items ?? [];
  }

  async createPrewarm(set: SidecarSet, a: SidecarPrewarmAction): Promise<ImagePrewarm> {
    const body = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'ImagePrewarm', ...prewarmObject(set, a, SIDECARSET_LABEL) };
    return (await kubeCall(`create ImagePrewarm ${a.name}`, () => this.custom.createClusterCustomObject({ ...PREWARMS, body, fieldManager: FIELD_MANAGER }))) as ImagePrewarm;
  }

  getPrewarm(name: string): Promise<ImagePrewarm | undefined> {
    return orUndefined(`get ImagePrewarm ${name}`, async () => (await this.custom.getClusterCustomObject({ ...PREWARMS, name })) as ImagePrewarm);
  }

  async deletePrewarm(name: string, uid: string): Promise<void> {
    // The uid is a precondition: an object made under the same name since it was listed is not deleted (409).
    await orUndefined(`delete ImagePrewarm ${name}`, () => this.custom.deleteClusterCustomObject({ ...PREWARMS, name, body: { preconditions: { uid } } }));
  }

  async writeStatus(set: SidecarSet, status: SidecarSetStatus): Promise<SidecarSet> {
    const { name, resourceVersion } = set.metadata;
    const body = { apiVersion: `${SCS_GROUP}/${SCS_VERSION}`, kind: SCS_KIND, metadata: { name, resourceVersion }, spec: set.spec, status };
    return (await kubeCall(`write status of SidecarSet ${name}`, () => this.custom.replaceClusterCustomObjectStatus({ group: SCS_GROUP, version: SCS_VERSION, plural: SCS_PLURAL, name, body }))) as SidecarSet;
  }
}
