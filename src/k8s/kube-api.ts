// The few Kubernetes API calls the agent makes, behind one small interface (so the kubelet strategy can be
// tested with a fake). Failures are AgentErrors by the one rule of api-error.ts.
import {
  CoreV1Api,
  DiscoveryV1Api,
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Event,
  type KubeConfig,
  type V1EndpointSlice,
  type V1Pod,
} from './client.js';
import { kubeCall } from './api-error.js';

/** What the agent reads and writes through the API server. Every method throws AgentError. */
export interface KubeApi {
  /** One pod; NotFound when there is none. */
  readPod(namespace: string, name: string): Promise<V1Pod>;
  /** Strategic-merge patch of the pod's spec or metadata. */
  patchPod(namespace: string, name: string, patch: object): Promise<V1Pod>;
  /** Strategic-merge patch of pods/status. */
  patchPodStatus(namespace: string, name: string, patch: object): Promise<V1Pod>;
  /** Every EndpointSlice of a namespace. */
  listEndpointSlices(namespace: string): Promise<V1EndpointSlice[]>;
  /** Creates a core/v1 Event. */
  createEvent(namespace: string, event: CoreV1Event): Promise<void>;
  /** Merge-patches an existing Event (count, lastTimestamp); NotFound when it is gone. */
  patchEvent(namespace: string, name: string, patch: object): Promise<void>;
}

/** KubeApi over @kubernetes/client-node. */
export class ClientKubeApi implements KubeApi {
  private readonly core: CoreV1Api;
  private readonly discovery: DiscoveryV1Api;

  constructor(kc: KubeConfig) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.discovery = kc.makeApiClient(DiscoveryV1Api);
  }

  async readPod(namespace: string, name: string): Promise<V1Pod> {
    return this.call(`reading pod ${namespace}/${name}`, () => this.core.readNamespacedPod({ namespace, name }));
  }

  async patchPod(namespace: string, name: string, patch: object): Promise<V1Pod> {
    return this.call(`patching pod ${namespace}/${name}`, () =>
      this.core.patchNamespacedPod({ namespace, name, body: patch, fieldManager: FIELD_MANAGER }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch)),
    );
  }

  async patchPodStatus(namespace: string, name: string, patch: object): Promise<V1Pod> {
    return this.call(`writing the status of pod ${namespace}/${name}`, () =>
      this.core.patchNamespacedPodStatus({ namespace, name, body: patch, fieldManager: FIELD_MANAGER }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch)),
    );
  }

  async listEndpointSlices(namespace: string): Promise<V1EndpointSlice[]> {
    const list = await this.call(`listing the EndpointSlices of ${namespace}`, () => this.discovery.listNamespacedEndpointSlice({ namespace }));
    return list.items;
  }

  async createEvent(namespace: string, event: CoreV1Event): Promise<void> {
    await this.call(`recording an event in ${namespace}`, () => this.core.createNamespacedEvent({ namespace, body: event }));
  }

  async patchEvent(namespace: string, name: string, patch: object): Promise<void> {
    await this.call(`updating event ${namespace}/${name}`, () =>
      this.core.patchNamespacedEvent({ namespace, name, body: patch }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)),
    );
  }

  private call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return kubeCall(what, fn);
  }
}

/** The field manager the agent's writes are recorded under. */
export const FIELD_MANAGER = 'inplace-agent';
