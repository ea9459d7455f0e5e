// What the SidecarSet coordinator reads and writes on the API server, and the snapshot a round plans from. Every
// method throws AgentError (kubeError).
import * as k8s from '../../k8s/client.js';
import { apiStatusCode, kubeCall } from '../../k8s/api-error.js';
import { selfRequester, type Requester } from '../../k8s/requester.js';
import { CR_GROUP, CR_KIND, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, NODE_PREWARM_PLURAL, type ImagePrewarm, type NodePrewarm } from '../image-prewarm/types.js';
import { prewarmObject, type SidecarPrewarmAction } from './prewarm.js';
import { SidecarReasons, type SidecarPodView, type SidecarRestartAction, type SidecarRestartView } from './plan.js';
import { selectorString } from './selector.js';
import { SCS_GROUP, SCS_KIND, SCS_PLURAL, SCS_VERSION, type SidecarSet, type SidecarSetStatus } from './types.js';

/** Label on each ContainerRestart a SidecarSet creates: the SidecarSet's uid. */
export const SIDECARSET_LABEL = 'inplace-agent.io/sidecarset';
/** Label on each ContainerRestart a SidecarSet creates: the key of the image set it upgrades to (plan.ts imagesKey). */
export const IMAGES_LABEL = 'inplace-agent.io/sidecarset-images';
/** The ImagePrewarm resource for CustomObjectsApi calls. */
const PREWARMS = { group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL };
/** The field manager of the coordinator's writes. */
const FIELD_MANAGER = 'inplace-agent-sidecarset';

/** The SidecarSet coordinator's view of the API server. */
export interface SidecarSetApi {
  listSidecarSets(): Promise<SidecarSet[]>;
  /** The pods of every namespace that the pod selector matches, as the planner sees them. */
  listPods(set: SidecarSet): Promise<SidecarPodView[]>;
  listRestarts(set: SidecarSet): Promise<SidecarRestartView[]>;
  createRestart(set: SidecarSet, a: SidecarRestartAction): Promise<void>;
  /** The ImagePrewarms carrying the SidecarSet's label; none when the ImagePrewarm CRD is not installed. */
  listPrewarms(set: SidecarSet): Promise<ImagePrewarm[]>;
  /** Every node's pre-warm record (deploy/optional/fleet-prewarm-rbac.yaml lets the agents list them). */
  listNodePrewarms(): Promise<NodePrewarm[]>;
  /** Creates the SidecarSet's ImagePrewarm for one namespace; a 409 (it exists) throws Aborted. */
  createPrewarm(set: SidecarSet, a: SidecarPrewarmAction): Promise<void>;
  /** The ImagePrewarm of that name, whoever owns it; undefined when there is none. */
  getPrewarm(name: string): Promise<ImagePrewarm | undefined>;
  /** Deletes it if it is still the object with this uid (gone already is fine). */
  deletePrewarm(name: string, uid: string): Promise<void>;
  writeStatus(set: SidecarSet, status: SidecarSetStatus): Promise<void>;
}

/** A pod as the planner sees it. */
export function podView(p: k8s.V1Pod, namespaceLabels: Record<string, string>): SidecarPodView {
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    uid: p.metadata?.uid ?? '',
    ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
    labels: p.metadata?.labels ?? {},
    namespaceLabels,
    annotations: p.metadata?.annotations ?? {},
    containers: (p.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image ?? '' })),
    initContainers: (p.spec?.initContainers ?? []).map((c) => ({ name: c.name, image: c.image ?? '' })),
    // As JSON (the typed client's objects carry keys of undefined), as the SidecarSet's containers are read.
    specs: Object.fromEntries([...(p.spec?.containers ?? []), ...(p.spec?.initContainers ?? [])].map((c) => [c.name, JSON.parse(JSON.stringify(c)) as object])),
    ready: p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    deleting: !!p.metadata?.deletionTimestamp,
  };
}

/** A ContainerRestart of the SidecarSet as the planner sees it. */
export function restartView(cr: ContainerRestart): SidecarRestartView {
  const bad = cr.status?.containers?.find((c) => c.reason || c.exitCode !== undefined);
  const reason = bad?.reason ?? cr.status?.reason;
  return {
    name: cr.metadata.name ?? '',
    namespace: cr.metadata.namespace ?? '',
    podName: cr.spec.podName,
    imagesKey: cr.metadata.labels?.[IMAGES_LABEL] ?? '',
    phase: cr.status?.phase,
    ...(cr.status?.phase === 'Failed'
      ? { failure: { ...(bad ? { container: bad.name } : {}), reason: reason ?? SidecarReasons.restartFailed, ...(bad?.exitCode !== undefined ? { exitCode: bad.exitCode } : {}) } }
      : {}),
  };
}

/** The ContainerRestart of one pod's sidecar upgrade: the sidecars alone, asked for by the agent itself. */
export function restartObject(set: SidecarSet, a: SidecarRestartAction, requester: Requester): ContainerRestart {
  const s = set.spec.updateStrategy ?? {};
  return {
    apiVersion: `${CR_GROUP}/${CR_VERSION}`,
    kind: CR_KIND,
    metadata: {
      name: a.name,
      namespace: a.namespace,
      labels: { [SIDECARSET_LABEL]: set.metadata.uid ?? '', [IMAGES_LABEL]: a.imagesKey },
    },
    spec: {
      podName: a.pod,
      containers: a.containers,
      strategy: {
        // drain false: the app keeps serving while its sidecar restarts.
        ...(s.drain ? {} : { drainSeconds: 0 }),
        failurePolicy: set.spec.failurePolicy === 'Pause' ? 'Fail' : 'Rollback',
      },
      requester,
    },
  };
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

  async listPods(set: SidecarSet): Promise<SidecarPodView[]> {
    const labelSelector = selectorString(set.spec.selector);
    const [pods, nss] = await Promise.all([
      kubeCall(`list pods for SidecarSet ${set.metadata.name}`, () => this.core.listPodForAllNamespaces({ labelSelector })),
      kubeCall('list namespaces', () => this.core.listNamespace()),
    ]);
    const nsLabels = new Map(nss.items.map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]));
    return pods.items.map((p) => podView(p, nsLabels.get(p.metadata?.namespace ?? '') ?? {}));
  }

  async listRestarts(set: SidecarSet): Promise<SidecarRestartView[]> {
    const r = await kubeCall(`list ContainerRestarts of SidecarSet ${set.metadata.name}`, () =>
      this.custom.listClusterCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, labelSelector: `${SIDECARSET_LABEL}=${set.metadata.uid ?? ''}` }),
    );
    return ((r as { items?: ContainerRestart[] }).items ?? []).map(restartView);
  }

  async createRestart(set: SidecarSet, a: SidecarRestartAction): Promise<void> {
    this.self ??= selfRequester(this.kc).catch((err: unknown) => {
      this.self = undefined;
      throw err;
    });
    const body = restartObject(set, a, await this.self);
    await kubeCall(`create ContainerRestart ${a.namespace}/${a.name}`, () =>
      this.custom.createNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: a.namespace, body, fieldManager: FIELD_MANAGER }),
    );
  }

  async listPrewarms(set: SidecarSet): Promise<ImagePrewarm[]> {
    const labelSelector = `${SIDECARSET_LABEL}=${set.metadata.uid ?? ''}`;
    const r = await this.orUndefined(`list ImagePrewarms of SidecarSet ${set.metadata.name}`, () => this.custom.listClusterCustomObject({ ...PREWARMS, labelSelector }));
    return (r as { items?: ImagePrewarm[] } | undefined)?.items ?? [];
  }

  async listNodePrewarms(): Promise<NodePrewarm[]> {
    const r = await kubeCall('list NodePrewarms', () => this.custom.listClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL }));
    return (r as { items?: NodePrewarm[] }).items ?? [];
  }

  async createPrewarm(set: SidecarSet, a: SidecarPrewarmAction): Promise<void> {
    const body = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'ImagePrewarm', ...prewarmObject(set, a, SIDECARSET_LABEL) };
    await kubeCall(`create ImagePrewarm ${a.name}`, () => this.custom.createClusterCustomObject({ ...PREWARMS, body, fieldManager: FIELD_MANAGER }));
  }

  getPrewarm(name: string): Promise<ImagePrewarm | undefined> {
    return this.orUndefined(`get ImagePrewarm ${name}`, async () => (await this.custom.getClusterCustomObject({ ...PREWARMS, name })) as ImagePrewarm);
  }

  async deletePrewarm(name: string, uid: string): Promise<void> {
    // The uid is a precondition: an object made under the same name since it was listed is not deleted (409).
    await this.orUndefined(`delete ImagePrewarm ${name}`, () => this.custom.deleteClusterCustomObject({ ...PREWARMS, name, body: { preconditions: { uid } } }));
  }

  /** fn's answer; undefined for a 404 (the object, or its CRD, is not there). */
  private async orUndefined<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await kubeCall(what, fn);
    } catch (err) {
      if (apiStatusCode(err) === 404) return undefined;
      throw err;
    }
  }

  async writeStatus(set: SidecarSet, status: SidecarSetStatus): Promise<void> {
    const { name, resourceVersion } = set.metadata;
    const body = { apiVersion: `${SCS_GROUP}/${SCS_VERSION}`, kind: SCS_KIND, metadata: { name, resourceVersion }, spec: set.spec, status };
    await kubeCall(`write status of SidecarSet ${name}`, () => this.custom.replaceClusterCustomObjectStatus({ group: SCS_GROUP, version: SCS_VERSION, plural: SCS_PLURAL, name, body }));
  }
}
