// What the SidecarSet coordinator reads and writes on the API server, and the snapshot a round plans from. Every
// method throws AgentError (kubeError).
import * as k8s from '../../k8s/client.js';
import { kubeCall } from '../../k8s/api-error.js';
import { selfRequester, type Requester } from '../../k8s/requester.js';
import { CR_GROUP, CR_KIND, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../container-restart/types.js';
import { SidecarReasons, type SidecarPodView, type SidecarRestartAction, type SidecarRestartView } from './plan.js';
import { selectorString } from './selector.js';
import { SCS_GROUP, SCS_KIND, SCS_PLURAL, SCS_VERSION, type SidecarSet, type SidecarSetStatus } from './types.js';

/** Label on each ContainerRestart a SidecarSet creates: the SidecarSet's uid. */
export const SIDECARSET_LABEL = 'inplace-agent.io/sidecarset';
/** Label on each ContainerRestart a SidecarSet creates: the key of the image set it upgrades to (plan.ts imagesKey). */
export const IMAGES_LABEL = 'inplace-agent.io/sidecarset-images';
/** The field manager of the coordinator's writes. */
const FIELD_MANAGER = 'inplace-agent-sidecarset';

/** The SidecarSet coordinator's view of the API server. */
export interface SidecarSetApi {
  listSidecarSets(): Promise<SidecarSet[]>;
  /** The pods of every namespace that the pod selector matches, as the planner sees them. */
  listPods(set: SidecarSet): Promise<SidecarPodView[]>;
  listRestarts(set: SidecarSet): Promise<SidecarRestartView[]>;
  createRestart(set: SidecarSet, a: SidecarRestartAction): Promise<void>;
  writeStatus(set: SidecarSet, status: SidecarSetStatus): Promise<void>;
}

/** A pod as the planner sees it. */
export function podView(p: k8s.V1Pod, namespaceLabels: Record<string, string>): SidecarPodView {
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    uid: p.metadata?.uid ?? '',
    labels: p.metadata?.labels ?? {},
    namespaceLabels,
    annotations: p.metadata?.annotations ?? {},
    containers: (p.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image ?? '' })),
    initContainers: (p.spec?.initContainers ?? []).map((c) => ({ name: c.name, image: c.image ?? '' })),
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

  async writeStatus(set: SidecarSet, status: SidecarSetStatus): Promise<void> {
    const { name, resourceVersion } = set.metadata;
    const body = { apiVersion: `${SCS_GROUP}/${SCS_VERSION}`, kind: SCS_KIND, metadata: { name, resourceVersion }, spec: set.spec, status };
    await kubeCall(`write status of SidecarSet ${name}`, () => this.custom.replaceClusterCustomObjectStatus({ group: SCS_GROUP, version: SCS_VERSION, plural: SCS_PLURAL, name, body }));
  }
}
