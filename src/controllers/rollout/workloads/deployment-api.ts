// What the coordinator reads and writes of a Deployment and its ReplicaSets, behind one small interface, on
// @kubernetes/client-node. Every method throws AgentError (kubeError); a get answers undefined for a 404.
import * as k8s from '../../../k8s/client.js';
import { apiStatusCode, kubeCall, kubeError } from '../../../k8s/api-error.js';
import { selectorFor } from '../../../k8s/label-selector.js';
import { historyPatch, historyReplicaSet } from './history.js';
import { deploymentRelease, partitionRelease, strategyRelease, templateRestore } from './hold.js';

const FIELD_MANAGER = 'inplace-agent-rollout';

/** The Deployment side of a rollout's reads and writes. */
export interface DeploymentApi {
  getDeployment(namespace: string, name: string): Promise<k8s.V1Deployment | undefined>;
  listReplicaSets(namespace: string, selector: Record<string, string>): Promise<k8s.V1ReplicaSet[]>;
  /** Replaces the ReplicaSet's spec.template, only if it is still the object with this uid and resourceVersion (409 otherwise). */
  patchReplicaSetTemplate(namespace: string, rs: k8s.V1ReplicaSet, template: k8s.V1PodTemplateSpec): Promise<k8s.V1ReplicaSet>;
  /** Writes rs's template and revision to the Deployment's history ReplicaSet (history.ts): creates it, or patches `history`. */
  keepPrevious(namespace: string, deployment: { name: string; uid: string; selector: Record<string, string> }, rs: k8s.V1ReplicaSet, history?: k8s.V1ReplicaSet): Promise<k8s.V1ReplicaSet>;
  /** Sets a held Deployment's template back to its ReplicaSet's (hold.ts templateRestore); fails when no longer held. */
  restoreTemplate(namespace: string, name: string, template: unknown, why?: string): Promise<k8s.V1Deployment>;
  /** Gives a Deployment the hold paused back to its controller (hold.ts); fails (Aborted/InvalidArgument) when it is no longer held. */
  releaseDeployment(namespace: string, name: string): Promise<k8s.V1Deployment>;
  /** Gives a StatefulSet the hold holds back to its controller: the user's partition, or only the annotation removed when `onDelete` (hold.ts); fails when no longer held. */
  releaseStatefulSet(namespace: string, name: string, partition: number, onDelete?: boolean): Promise<k8s.V1StatefulSet>;
  /** Gives a DaemonSet the hold holds back to its controller: its rolling update as recorded (hold.ts). */
  releaseDaemonSet(namespace: string, name: string, recorded: string): Promise<k8s.V1DaemonSet>;
}

/** DeploymentApi on a real API server, with the agent's credentials. */
export class KubeDeploymentApi implements DeploymentApi {
  private readonly apps: k8s.AppsV1Api;

  constructor(kc: k8s.KubeConfig) {
    this.apps = kc.makeApiClient(k8s.AppsV1Api);
  }

  async getDeployment(namespace: string, name: string): Promise<k8s.V1Deployment | undefined> {
    try {
      return await this.apps.readNamespacedDeployment({ namespace, name });
    } catch (err) {
      if (apiStatusCode(err) === 404) return undefined;
      throw kubeError(err, `get Deployment ${namespace}/${name}`, 'agent');
    }
  }

  async listReplicaSets(namespace: string, selector: Record<string, string>): Promise<k8s.V1ReplicaSet[]> {
    return (await kubeCall(`list ReplicaSets in ${namespace}`, () => this.apps.listNamespacedReplicaSet({ namespace, labelSelector: selectorFor(selector) }), 'agent')).items;
  }

  patchReplicaSetTemplate(namespace: string, rs: k8s.V1ReplicaSet, template: k8s.V1PodTemplateSpec): Promise<k8s.V1ReplicaSet> {
    const name = rs.metadata?.name ?? '';
    const body = [
      { op: 'test', path: '/metadata/uid', value: rs.metadata?.uid },
      { op: 'test', path: '/metadata/resourceVersion', value: rs.metadata?.resourceVersion },
      { op: 'replace', path: '/spec/template', value: template },
    ];
    return kubeCall(`patch the template of ReplicaSet ${namespace}/${name}`, () => this.apps.patchNamespacedReplicaSet({ namespace, name, body, fieldManager: FIELD_MANAGER }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch)), 'agent');
  }

  keepPrevious(namespace: string, deployment: { name: string; uid: string; selector: Record<string, string> }, rs: k8s.V1ReplicaSet, history?: k8s.V1ReplicaSet): Promise<k8s.V1ReplicaSet> {
    if (!history) {
      const body = historyReplicaSet(deployment, rs);
      return kubeCall(`create ReplicaSet ${namespace}/${body.metadata?.name ?? ''}`, () => this.apps.createNamespacedReplicaSet({ namespace, body, fieldManager: FIELD_MANAGER }), 'agent');
    }
    const name = history.metadata?.name ?? '';
    return kubeCall(`patch ReplicaSet ${namespace}/${name}`, () => this.apps.patchNamespacedReplicaSet({ namespace, name, body: historyPatch(history, rs), fieldManager: FIELD_MANAGER }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch)), 'agent');
  }

  releaseStatefulSet(namespace: string, name: string, partition: number, onDelete = false): Promise<k8s.V1StatefulSet> {
    return kubeCall(`release StatefulSet ${namespace}/${name}`, () => this.apps.patchNamespacedStatefulSet({ namespace, name, body: partitionRelease(partition, onDelete), fieldManager: FIELD_MANAGER }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch)), 'agent');
  }

  releaseDaemonSet(namespace: string, name: string, recorded: string): Promise<k8s.V1DaemonSet> {
    return kubeCall(`release DaemonSet ${namespace}/${name}`, () => this.apps.patchNamespacedDaemonSet({ namespace, name, body: strategyRelease(recorded), fieldManager: FIELD_MANAGER }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch)), 'agent');
  }

  restoreTemplate(namespace: string, name: string, template: unknown, why?: string): Promise<k8s.V1Deployment> {
    return kubeCall(`set the template of Deployment ${namespace}/${name} back`, () => this.apps.patchNamespacedDeployment({ namespace, name, body: templateRestore(template, why), fieldManager: FIELD_MANAGER }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch)), 'agent');
  }

  releaseDeployment(namespace: string, name: string): Promise<k8s.V1Deployment> {
    return kubeCall(`release Deployment ${namespace}/${name}`, () => this.apps.patchNamespacedDeployment({ namespace, name, body: deploymentRelease(), fieldManager: FIELD_MANAGER }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch)), 'agent');
  }
}
