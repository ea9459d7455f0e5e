// The fleet pre-warm objects as plain TypeScript: ImagePrewarm (what operators ask for, cluster-scoped) and
// NodePrewarm (one per node, written by that node's agent alone). Field names match deploy/crds/.
import type { Requester } from '../../k8s/requester.js';

/** API group and version of the fleet objects. */
export const FLEET_GROUP = 'inplace-agent.io';
export const FLEET_VERSION = 'v1alpha1';
export const IMAGE_PREWARM_PLURAL = 'imageprewarms';
export const NODE_PREWARM_PLURAL = 'nodeprewarms';
/** The namespace holding the slot Leases (the agent's own namespace). */
export const DEFAULT_LEASE_NAMESPACE = 'inplace-system';
/** Label on every slot Lease, naming its ImagePrewarm. */
export const PREWARM_LABEL = 'inplace-agent.io/prewarm';
/** Label on every slot Lease naming its holder, as turnKey(holder): each agent watches the Leases with its own. */
export const TURN_LABEL = 'inplace-agent.io/turn';

/** A reference to a pull Secret. */
export interface SecretRef {
  namespace: string;
  name: string;
}

/** ImagePrewarm.spec */
export interface ImagePrewarmSpec {
  images: string[];
  /** Nodes whose labels carry all of these. */
  nodeSelector?: Record<string, string>;
  /** Or: the nodes where pods with these labels in this namespace run now. */
  podSelector?: { namespace: string; matchLabels: Record<string, string> };
  /** How many nodes pull at once, across the cluster. Default 1. */
  maxParallelNodes?: number;
  /** How many nodes (first in the stable order) pull first, alone, before the rest fan out. Default 0. */
  seedNodes?: number;
  pin?: boolean;
  imagePullSecrets?: SecretRef[];
  /** Nodes not done this long after the spec's generation was first seen by them end Failed. */
  activeDeadlineSeconds?: number;
  /** Attempts per image and node after the first before it is Failed. Default 3. */
  backoffLimit?: number;
  /** Re-check (and re-pull what is gone) every this many seconds once done; 0 or absent: never. */
  refreshSeconds?: number;
  /** Who created (or last changed) the spec, written at admission; the agents read Secrets only within their rights. */
  requester?: Requester;
}

/** A failed node in the summary. */
export interface FailedNode {
  node: string;
  /** Why, a constant of controllers/image-prewarm/reasons.ts (PrewarmReasons): the first failed image's. */
  reason: string;
  /** Each failed image with its message. */
  message?: string;
}

/** ImagePrewarm.status, summed up from the NodePrewarm objects. */
export interface ImagePrewarmStatus {
  observedGeneration?: number;
  desired: number;
  succeeded: number;
  failed: number;
  pulling: number;
  waiting: number;
  failedNodes: FailedNode[];
  /** Every seed node has finished this generation (Succeeded or Failed): the others may start. */
  seedsDone?: boolean;
  /** The node whose agent wrote this summary, and when. */
  summarizedBy?: string;
  lastSummaryTime?: string;
}

/** An ImagePrewarm object. */
export interface ImagePrewarm {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; uid?: string; generation?: number; resourceVersion?: string; creationTimestamp?: string | Date };
  spec: ImagePrewarmSpec;
  status?: ImagePrewarmStatus;
}

/** Where one image stands on one node. */
export type NodeImagePhase = 'Waiting' | 'Pulling' | 'Succeeded' | 'Failed';

/** One image's record on one node (the NodeImage shape: phase, bytes, digest, pinned, message, times). */
export interface NodeImageStatus {
  image: string;
  phase: NodeImagePhase;
  bytesDone: number;
  bytesTotal: number;
  digest?: string;
  pinned?: boolean;
  message?: string;
  /** Why the last attempt failed, a constant of controllers/image-prewarm/reasons.ts (PrewarmReasons). */
  reason?: string;
  attempts: number;
  startTime?: string;
  completionTime?: string;
}

/** One ImagePrewarm's part on one node. */
export interface NodePrewarmEntry {
  /** The ImagePrewarm's generation this record belongs to. */
  generation: number;
  /** The node's own phase for this prewarm: the worst of its images (Failed > Pulling > Waiting > Succeeded). */
  phase: NodeImagePhase;
  images: NodeImageStatus[];
  /** When the node first saw this generation (its deadline counts from here). */
  firstSeen: string;
  lastCheck?: string;
  /** After a failed attempt: no new attempt before this time. */
  retryAfter?: string;
}

/** A NodePrewarm object: named after its node; status.prewarms is keyed by ImagePrewarm name. */
export interface NodePrewarm {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: { nodeName: string };
  status?: { prewarms?: Record<string, NodePrewarmEntry> };
}

/** The phase of a node for one prewarm, from its images. */
export function nodePhase(images: NodeImageStatus[]): NodeImagePhase {
  if (images.some((i) => i.phase === 'Failed')) return 'Failed';
  if (images.some((i) => i.phase === 'Pulling')) return 'Pulling';
  if (images.some((i) => i.phase === 'Waiting')) return 'Waiting';
  return 'Succeeded';
}
