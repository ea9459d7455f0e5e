// The InPlaceRollout custom resource (deploy/crds/inplacerollout.yaml), as plain TypeScript types. The object
// holds policy only: the desired state stays in the target workload's template.
import type { Requester } from '../../k8s/requester.js';
import type { Coordinated } from '../kit/object.js';

/** API group and version of the resource. */
export const IPR_GROUP = 'inplace-agent.io';
/** API version of the resource. */
export const IPR_VERSION = 'v1alpha1';
/** Plural resource name in URLs. */
export const IPR_PLURAL = 'inplacerollouts';
/** Kind of the resource. */
export const IPR_KIND = 'InPlaceRollout';
/** Label on every object a rollout creates (ContainerRestarts, ImagePrewarms), naming the rollout. */
export const ROLLOUT_LABEL = 'inplace-agent.io/rollout';

/** What happens to a pod whose new container fails. */
export type RolloutFailurePolicy = 'Rollback' | 'Pause';
/** What happens to a pod whose template changed beyond what can be changed in place. */
export type RolloutFallback = 'Recreate' | 'Pause';
/** Phases of a rollout. */
export type RolloutPhase = 'Prewarming' | 'Progressing' | 'Paused' | 'Succeeded' | 'Failed';

/** InPlaceRollout.spec */
export interface InPlaceRolloutSpec {
  targetRef: { apiVersion: string; kind: 'Deployment' | 'StatefulSet' | 'DaemonSet'; name: string };
  /** Pods not ready at once, counting those already unavailable: an integer or a percent ("25%"). Default 1. */
  maxUnavailable?: number | string;
  /** StatefulSet: ordinals below it keep the old revision; DaemonSet: this many pods (last in node order) keep it. */
  partition?: number;
  paused?: boolean;
  /** Pull the new images on every node holding a target pod before the first pod is touched. Default true. */
  prewarm?: boolean;
  strategy?: {
    gracePeriodSeconds?: number;
    drainSeconds?: number;
    minReadySeconds?: number;
    failurePolicy?: RolloutFailurePolicy;
  };
  fallback?: RolloutFallback;
  /** How long one pod may take to be updated and ready (after minReadySeconds). Default 600. */
  progressDeadlineSeconds?: number;
  /** Who asked for the rollout (whoever last wrote the spec; written at admission): it acts only within their rights (rollout-access.ts). */
  requester?: Requester;
}

/** A pod the rollout failed on. */
export interface RolloutFailure {
  pod: string;
  container?: string;
  reason: string;
  exitCode?: number;
}

/** A Kubernetes-style condition. */
export interface RolloutCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/** InPlaceRollout.status: written by the coordinating agent, from one snapshot, every time whole. */
export interface InPlaceRolloutStatus {
  observedGeneration?: number;
  phase?: RolloutPhase;
  currentRevision?: string;
  updateRevision?: string;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  /** Pods being updated now. */
  podsInFlight?: string[];
  failures?: RolloutFailure[];
  message?: string;
  /** The node whose agent coordinates the rollout. */
  coordinator?: string;
  conditions?: RolloutCondition[];
}

/** An InPlaceRollout object as read from the API server. */
export type InPlaceRollout = Coordinated<InPlaceRolloutSpec, InPlaceRolloutStatus>;
