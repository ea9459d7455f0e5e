// The ContainerRestart custom resource (deploy/crds/containerrestart.yaml), as plain TypeScript types.
import type { FailurePolicy } from '../kubelet/options.js';
import type { Requester } from '../requester.js';

/** API group, version and plural of the resource. */
export const CR_GROUP = 'inplace-agent.io';
/** API version of the resource. */
export const CR_VERSION = 'v1alpha1';
/** Plural resource name in URLs. */
export const CR_PLURAL = 'containerrestarts';
/** Kind of the resource. */
export const CR_KIND = 'ContainerRestart';

/** What to do when a container fails (the kubelet strategy's own field). */
export type { FailurePolicy };

/** The request: immutable once created. */
export interface ContainerRestartSpec {
  podName: string;
  containers: { name: string; image?: string }[];
  strategy?: {
    gracePeriodSeconds?: number;
    drainSeconds?: number;
    minReadySeconds?: number;
    failurePolicy?: FailurePolicy;
    ordered?: boolean;
  };
  activeDeadlineSeconds?: number;
  ttlSecondsAfterFinished?: number;
  /** Who created the request (written at admission, see requester.ts); the agent acts only within their rights. */
  requester?: Requester;
}

/** Phases of a ContainerRestart. */
export type ContainerRestartPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';

/** One container's progress. */
export interface ContainerRestartContainerStatus {
  name: string;
  /** The agent's step for this container (Waiting, Stopping, Done, RolledBack, ...). */
  state: string;
  oldContainerID?: string;
  newContainerID?: string;
  oldImage?: string;
  newImage?: string;
  exitCode?: number;
  downtimeMilliseconds?: number;
  message?: string;
  /** Why this container failed or was rolled back (a constant of engine/reasons.ts). */
  reason?: string;
}

/** A Kubernetes-style condition. */
export interface ContainerRestartCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/** What the agent reports. */
export interface ContainerRestartStatus {
  phase?: ContainerRestartPhase;
  /** Recorded before the operation runs, so that the request never runs twice. */
  operationId?: string;
  operationState?: string;
  nodeName?: string;
  /** The agent that took the request: only it runs, follows and deletes it. */
  agentId?: string;
  podIP?: string;
  summary?: string;
  message?: string;
  /** Why the request failed or was refused (a constant of engine/reasons.ts); also the condition's reason. */
  reason?: string;
  observedGeneration?: number;
  startTime?: string;
  completionTime?: string;
  containers?: ContainerRestartContainerStatus[];
  conditions?: ContainerRestartCondition[];
}

/** A ContainerRestart object as read from the API server. */
export interface ContainerRestart {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    generateName?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: ContainerRestartSpec;
  status?: ContainerRestartStatus;
}

/** Whether a phase is final. */
export function isFinished(phase: ContainerRestartPhase | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/** `namespace/name` of an object. */
export function keyOf(cr: ContainerRestart): string {
  return `${cr.metadata.namespace ?? ''}/${cr.metadata.name ?? ''}`;
}
