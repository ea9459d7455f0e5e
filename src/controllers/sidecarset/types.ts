// The SidecarSet custom resource (deploy/crds/sidecarset.yaml), as plain TypeScript types. Cluster-scoped: sidecar
// containers a platform team injects into every matching pod (deploy/sidecarset-injection.yaml) and upgrades in
// place.
import type { V1Container, V1LabelSelector, V1Volume } from '../../k8s/client.js';
import type { TimedCondition } from '../../k8s/conditions.js';
import type { Coordinated } from '../kit/object.js';

/** API group of the resource. */
export const SCS_GROUP = 'inplace-agent.io';
/** API version of the resource. */
export const SCS_VERSION = 'v1alpha1';
/** Plural resource name in URLs. */
export const SCS_PLURAL = 'sidecarsets';
/** Kind of the resource. */
export const SCS_KIND = 'SidecarSet';
/** Prefix of the pod annotation the injection writes: `sidecarset.inplace-agent.io/<name>` = the SidecarSet's generation. */
export const INJECTED_ANNOTATION_PREFIX = 'sidecarset.inplace-agent.io/';

/** The pod annotation that records which generation of SidecarSet `name` was injected into the pod. */
export function injectedAnnotation(name: string): string {
  return INJECTED_ANNOTATION_PREFIX + name;
}

/** What happens to a pod whose new sidecar fails. */
export type SidecarFailurePolicy = 'Rollback' | 'Pause';

/** SidecarSet.spec.updateStrategy */
export interface SidecarUpdateStrategy {
  /** Sidecars being upgraded at once: an integer or a percent of the matching pods ("25%"). Default 1. */
  maxUnavailable?: number | string;
  paused?: boolean;
  /** This many matching pods, the last in namespace/name order, keep the older sidecars. */
  partition?: number;
  /** Upgrade only the matching pods this selector also matches. */
  selector?: V1LabelSelector;
  /** Take the pod out of its Services during the upgrade. Default false. */
  drain?: boolean;
  /** Pull the new images on the nodes of the pods to upgrade before the first one (prewarm.ts). Default false. */
  prewarm?: boolean;
}

/** SidecarSet.spec */
export interface SidecarSetSpec {
  selector: V1LabelSelector;
  /** Absent: every namespace but kube-system and the agent's own. */
  namespaceSelector?: V1LabelSelector;
  allowCommonNames?: boolean;
  containers?: V1Container[];
  /** Native sidecars: restartPolicy Always. */
  initContainers?: V1Container[];
  volumes?: V1Volume[];
  updateStrategy?: SidecarUpdateStrategy;
  failurePolicy?: SidecarFailurePolicy;
}

/** A pod whose sidecar upgrade failed. */
export interface SidecarFailure {
  /** namespace/name */
  pod: string;
  container?: string;
  reason: string;
  exitCode?: number;
}

/** SidecarSet.status: computed whole from one snapshot (plan.ts). */
export interface SidecarSetStatus {
  observedGeneration?: number;
  /** Pods the selectors match now. */
  matchedPods?: number;
  /** Matched pods that carry the SidecarSet's containers (injected, any version). */
  injectedPods?: number;
  /** Injected pods whose sidecars run the SidecarSet's current images. */
  updatedPods?: number;
  /** Updated pods that are Ready. */
  readyPods?: number;
  /** Matched pods left alone at injection because a container of theirs had a sidecar's name. */
  conflictPods?: number;
  /** Injected pods whose sidecars differ from the current spec beyond their images (env, command, mounts...): new pods get it. */
  olderSpecPods?: number;
  /** Pods whose sidecars are being upgraded now (namespace/name). */
  podsInFlight?: string[];
  failures?: SidecarFailure[];
  message?: string;
  conditions?: TimedCondition[];
}

/** A SidecarSet object as read from the API server. */
export type SidecarSet = Coordinated<SidecarSetSpec, SidecarSetStatus>;
