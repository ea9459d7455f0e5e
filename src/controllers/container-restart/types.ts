// The ContainerRestart custom resource (deploy/crds/containerrestart.yaml), as plain TypeScript types.
import type { FailurePolicy } from '../../kube/kubelet/steps.js';
import type { Requester } from '../../k8s/requester.js';
import { isRefusal } from '../../engine/reasons.js';

/** The condition every status carries: True on success, False on failure or refusal, Unknown meanwhile. */
export const SUCCEEDED_CONDITION = 'Succeeded';

/** Reason of a request the agent refused without touching anything, when the refusal carries no reason of its own. */
export const REASON_REFUSED = 'Refused';

/** Reason of the Succeeded condition while a taken request has not started (Unknown). */
export const REASON_PENDING = 'Pending';

/** Reason of the Succeeded condition once every container was restarted and verified (True). */
export const REASON_SUCCEEDED = 'Succeeded';

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
  /** How long the request may wait for an agent to take it, from its creation (the CRD's default: 3600). */
  unclaimedTTLSeconds?: number;
  /** The cluster admin's opt-in to restarting a static (mirror) pod (needs `restart-static containerrestarts`). */
  allowStaticPod?: boolean;
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
  /** What clients behind the pod's Services saw (drained, or restarted undrained). */
  traffic?: string;
  /** Longest time a Service of the pod had no ready endpoint during the restart (absent: it always had one). */
  unservedMilliseconds?: number;
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
    /** Typed as the client library types it; from the custom objects API it arrives as an RFC 3339 string. */
    creationTimestamp?: Date;
  };
  spec: ContainerRestartSpec;
  status?: ContainerRestartStatus;
}

/** Whether a phase is final. */
export function isFinished(phase: ContainerRestartPhase | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/** Why the agent refused the request without touching anything, when it did. */
export function refusal(cr: ContainerRestart): string | undefined {
  const c = cr.status?.conditions?.find((x) => x.type === SUCCEEDED_CONDITION);
  return c?.status === 'False' && (c.reason === REASON_REFUSED || isRefusal(c.reason)) ? (c.message ?? cr.status?.message ?? 'refused') : undefined;
}

/** `namespace/name` of an object. */
export function keyOf(cr: ContainerRestart): string {
  return `${cr.metadata.namespace ?? ''}/${cr.metadata.name ?? ''}`;
}

/** Whether a is a newer version of the same object than b (resource versions compared as numbers when they are). */
export function newer(a: ContainerRestart, b: ContainerRestart): boolean {
  const ra = a.metadata.resourceVersion ?? '';
  const rb = b.metadata.resourceVersion ?? '';
  if (/^\d+$/.test(ra) && /^\d+$/.test(rb)) return BigInt(ra) > BigInt(rb);
  return false;
}
