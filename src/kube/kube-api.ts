// The few Kubernetes API calls the agent makes, behind one small interface (so the kubelet strategy can be
// tested with a fake), and the one place that maps the API's failures into AgentError kinds.
import {
  ApiException,
  CoreV1Api,
  DiscoveryV1Api,
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Event,
  type KubeConfig,
  type V1EndpointSlice,
  type V1Pod,
} from './client.js';
import { AgentError, type ErrorKind } from '../errors.js';
import { AGENT_401_NOTE } from './api-error.js';

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

/** The Kubernetes API failure as an AgentError of the matching kind, naming what was attempted. */
export function kubeError(err: unknown, what: string): AgentError {
  if (err instanceof AgentError) return err;
  if (err instanceof ApiException) {
    const code = err.code;
    const kind: ErrorKind =
      code === 404
        ? 'NotFound'
        : code === 409
          ? 'Aborted'
          : code === 400 || code === 422
            ? 'InvalidArgument'
            : code === 401
              ? 'Unauthenticated'
              : code === 403
                ? 'FailedPrecondition'
                : code === 429 || code >= 500
                  ? 'Unavailable'
                  : 'Internal';
    return new AgentError(kind, `${what}: the API server answered ${code}: ${statusMessage(err.body)}`, { cause: err });
  }
  const msg = err instanceof Error ? err.message : String(err);
  return new AgentError('Unavailable', `${what}: the API server cannot be reached: ${msg}`, { cause: err });
}

function statusMessage(body: unknown): string {
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: string };
      return parsed.message ?? body.slice(0, 300);
    } catch {
      return body.slice(0, 300);
    }
  }
  if (body && typeof body === 'object' && 'message' in body) return String((body as { message: unknown }).message);
  return 'no message';
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

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const e = kubeError(err, what);
      // The agent's own credentials refused: its pod is being deleted (the API server no longer accepts a deleted
      // pod's bound token) or its token is being rotated. Waited out like an outage, not taken as the operation's
      // failure: a terminating agent's operation is finished by the next agent, from the journal.
      if (err instanceof ApiException && err.code === 401) throw new AgentError('Unavailable', `${e.message} (${AGENT_401_NOTE})`);
      throw e;
    }
  }
}

/** The field manager the agent's writes are recorded under. */
export const FIELD_MANAGER = 'inplace-agent';
