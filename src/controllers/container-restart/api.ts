// The ContainerRestart calls the agent and inplacectl make, over @kubernetes/client-node. Every method throws
// AgentError (see kubeError).
import { CustomObjectsApi, type KubeConfig } from '../../k8s/client.js';
import { kubeError as agentKubeError, type KubeCaller } from '../../k8s/api-error.js';
import { selfRequester, type Requester } from '../../k8s/requester.js';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart, type ContainerRestartStatus } from './types.js';

/** The API path of ContainerRestarts, in one namespace or all (for watches). */
export function containerRestartPath(namespace?: string): string {
  return namespace ? `/apis/${CR_GROUP}/${CR_VERSION}/namespaces/${namespace}/${CR_PLURAL}` : `/apis/${CR_GROUP}/${CR_VERSION}/${CR_PLURAL}`;
}

/** A list response. */
export interface ContainerRestartList {
  metadata?: { resourceVersion?: string };
  items: ContainerRestart[];
}

/** Typed access to ContainerRestart objects. */
export class ContainerRestartApi {
  private readonly api: CustomObjectsApi;
  private self?: Promise<Requester>;

  /** caller says whose credentials kc holds (see kubeError). */
  constructor(
    readonly kc: KubeConfig,
    private readonly caller: KubeCaller = 'agent',
  ) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  /** kubeError as this client's caller. */
  private kubeError(err: unknown, what: string) {
    return agentKubeError(err, what, this.caller);
  }

  /** This kubeconfig's user, asked once (a failed question is asked again next time). */
  private requester(): Promise<Requester> {
    return (this.self ??= selfRequester(this.kc, this.caller).catch((err: unknown) => {
      this.self = undefined;
      throw err;
    }));
  }

  private base(namespace: string) {
    return { group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace };
  }

  /** One object. */
  async get(namespace: string, name: string): Promise<ContainerRestart> {
    try {
      return (await this.api.getNamespacedCustomObject({ ...this.base(namespace), name })) as ContainerRestart;
    } catch (err) {
      throw this.kubeError(err, `get ContainerRestart ${namespace}/${name}`);
    }
  }

  /** Every object in one namespace, or in all when namespace is undefined. */
  async list(namespace?: string): Promise<ContainerRestartList> {
    try {
      const res = namespace
        ? await this.api.listNamespacedCustomObject({ ...this.base(namespace) })
        : await this.api.listClusterCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL });
      return res as ContainerRestartList;
    } catch (err) {
      throw this.kubeError(err, `list ContainerRestarts${namespace ? ` in ${namespace}` : ''}`);
    }
  }

  /**
   * Creates an object (metadata.name or generateName set by the caller), recording this kubeconfig's user as its
   * requester when the caller named none: where deploy/admission-requester.yaml is installed it writes the same.
   */
  async create(cr: ContainerRestart): Promise<ContainerRestart> {
    const namespace = cr.metadata.namespace ?? 'default';
    const body = cr.spec.requester ? cr : { ...cr, spec: { ...cr.spec, requester: await this.requester() } };
    try {
      return (await this.api.createNamespacedCustomObject({ ...this.base(namespace), body })) as ContainerRestart;
    } catch (err) {
      throw this.kubeError(err, `create ContainerRestart in ${namespace}`);
    }
  }

  /**
   * Replaces the status subresource. The object's metadata.resourceVersion goes with it, so a write based on a
   * stale read is refused with a 409 (Aborted) instead of overwriting a newer status.
   */
  async replaceStatus(cr: ContainerRestart, status: ContainerRestartStatus): Promise<ContainerRestart> {
    const namespace = cr.metadata.namespace ?? 'default';
    const name = cr.metadata.name ?? '';
    const body = { apiVersion: `${CR_GROUP}/${CR_VERSION}`, kind: 'ContainerRestart', metadata: { name, namespace, resourceVersion: cr.metadata.resourceVersion }, spec: cr.spec, status };
    try {
      return (await this.api.replaceNamespacedCustomObjectStatus({ ...this.base(namespace), name, body })) as ContainerRestart;
    } catch (err) {
      throw this.kubeError(err, `write status of ContainerRestart ${namespace}/${name}`);
    }
  }

  /** Deletes the object with this uid; a NotFound means it is gone already. */
  async delete(namespace: string, name: string, uid?: string): Promise<void> {
    try {
      await this.api.deleteNamespacedCustomObject({ ...this.base(namespace), name, body: uid ? { preconditions: { uid } } : undefined });
    } catch (err) {
      throw this.kubeError(err, `delete ContainerRestart ${namespace}/${name}`);
    }
  }
}
