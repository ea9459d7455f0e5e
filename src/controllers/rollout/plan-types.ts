// The planner's vocabulary: what it reads (views of the workload, its revisions and pods, the rollout's
// ContainerRestarts and pre-warm), what it answers (actions and a status), and the reasons the status gives.
import type { PrewarmProgress } from '../image-prewarm/summary.js';
import { KitReasons } from '../kit/reasons.js';
import type { CreateConflict } from '../kit/create-or-taken.js';
import type { PodTemplate } from './template-diff.js';
import type { InPlaceRollout, InPlaceRolloutStatus } from './types.js';

/** Reasons the status gives (condition reasons). */
export const REASON = {
  targetNotFound: 'TargetNotFound',
  targetInUse: 'TargetInUse',
  notOnDelete: 'TargetNotOnDelete',
  waitingForController: 'WaitingForController',
  revisionNotFound: 'RevisionNotFound',
  prewarming: KitReasons.prewarming,
  prewarmFailed: KitReasons.prewarmFailed,
  paused: 'Paused',
  podFailed: 'PodUpdateFailed',
  notInPlace: 'NotInPlace',
  updating: 'Updating',
  complete: 'Complete',
  /** The name of an object the rollout would create is held by one it does not own (a squatter, or another rollout). */
  nameTaken: KitReasons.nameTaken,
  /** The API server refused an object the rollout would create (422): its create is tried again with a back-off. */
  createRefused: KitReasons.createRefused,
  /** A ControllerRevision of the DaemonSet with a higher number than its template's is not the template: ignored. */
  revisionNotFromTemplate: 'RevisionNotFromTemplate',
} as const;

/** The condition types a rollout carries. */
export const PROGRESSING = 'Progressing';
export const COMPLETE = 'Complete';
/** Condition type, present (True) while the DaemonSet owns a revision that claims to be newer than its template's. */
export const IGNORED_REVISIONS = 'IgnoredRevisions';

/** Label the stock controllers put on every pod: the revision it was made from. */
export const REVISION_HASH_LABEL = 'controller-revision-hash';
/** Annotation on a Deployment's pod updated in place: the template (its hash, workloads/deployment-view.ts) it now runs. */
export const POD_TEMPLATE_ANNOTATION = 'inplace-agent.io/template';
/** Label the DaemonSet controller puts on its pods: the template generation. */
export const TEMPLATE_GENERATION_LABEL = 'pod-template-generation';

/** An object a round could not create, and why (kit/create-or-taken.ts): the planner makes it a failure in the status. */
export type { CreateConflict } from '../kit/create-or-taken.js';

/** The target workload as the planner needs it. */
export interface WorkloadView {
  kind: 'Deployment' | 'StatefulSet' | 'DaemonSet';
  name: string;
  uid: string;
  generation: number;
  observedGeneration: number;
  /** spec.updateStrategy.type */
  updateStrategy: string;
  /** Pods it should have: spec.replicas (StatefulSet), status.desiredNumberScheduled (DaemonSet). */
  desired: number;
  /** StatefulSet: status.updateRevision (a revision name); DaemonSet: undefined (see template). */
  updateRevision?: string;
  /** StatefulSet: status.currentRevision. */
  currentRevision?: string;
  /** StatefulSet on RollingUpdate held at admission (workloads/hold.ts): the user's partition, restored on release. */
  heldPartition?: number;
  /** DaemonSet held at admission (OnDelete while held): its rolling update as recorded, restored on release. */
  heldStrategy?: string;
  /** DaemonSet: every pod updated by its controller's count (status.updatedNumberScheduled == desiredNumberScheduled). */
  atRest?: boolean;
  /** DaemonSet: the template generation its new pods carry. */
  templateGeneration?: number;
  /** DaemonSet, Deployment: its spec.template as the API serves it (the target revision is the one whose data equals it). */
  template?: PodTemplate;
  /** Deployment: its own maxUnavailable (the budget the stock controller would keep), over the rollout's. */
  maxUnavailable?: number | string;
  /** Deployment: why the rollout does not act (workloads/deployment-view.ts); undefined: held, or nothing to do. */
  gate?: { phase: 'Progressing' | 'Paused' | 'Failed'; reason: string; message: string };
  /** Deployment: a pod updated in place is marked with an annotation (the ReplicaSet keeps its hash label). */
  marksPods?: boolean;
}

/** One ControllerRevision of the workload. */
export interface RevisionView {
  /** The revision's name. */
  name: string;
  /** What the pods of this revision carry as controller-revision-hash (the name for a StatefulSet). */
  hash: string;
  revision: number;
  template: PodTemplate;
}

/** One pod of the workload. */
export interface PodView {
  name: string;
  uid: string;
  nodeName?: string;
  /** StatefulSet ordinal (from the name). */
  ordinal?: number;
  revisionHash: string;
  templateGeneration?: string;
  deleting: boolean;
  ready: boolean;
  /** ms since the epoch when Ready last became True. */
  readySinceMs?: number;
  containers: { name: string; image: string }[];
  /** What the kubelet reports of each container: its image and readiness (absent: not known, so not ready). */
  statuses?: { name: string; image: string; ready: boolean; startedAtMs?: number }[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** One ContainerRestart the rollout created. */
export interface RestartView {
  name: string;
  pod: string;
  /** The revision (hash, and revision number) it takes the pod to. */
  revisionHash: string;
  revisionNumber: number;
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  /** The containers it restarts. */
  containers?: string[];
  /** Its creationTimestamp (ms since the epoch, whole seconds as the API server keeps it). */
  createdMs?: number;
  /** When it failed: the container, why, and its exit code. */
  failure?: { container?: string; reason: string; exitCode?: number };
}

/** The rollout's pre-warm as last seen. */
export type PrewarmView = PrewarmProgress;

/** Everything the planner looks at. */
export interface PlanInput {
  rollout: InPlaceRollout;
  workload?: WorkloadView;
  revisions: RevisionView[];
  pods: PodView[];
  restarts: RestartView[];
  prewarm?: PrewarmView;
  /** Another (older) rollout that names the same workload and so holds it (see target-claim.ts). */
  heldBy?: string;
  /** Objects the rollout could not create (a name held by another owner, a create the API server refused). */
  conflicts?: CreateConflict[];
  nowMs: number;
}

/** One thing to do. */
export type RolloutAction =
  | { kind: 'restart'; name: string; pod: string; podUid: string; containers: { name: string; image: string }[]; revisionHash: string; revisionNumber: number }
  | { kind: 'relabel'; pod: string; podUid: string; labels: Record<string, string | null>; annotations: Record<string, string | null> }
  | { kind: 'recreate'; pod: string; podUid: string; reason: string }
  | { kind: 'prewarm'; name: string; images: string[] };

/** The planner's answer: what to do now, the pre-warm that should exist (others are deleted), and the status. */
export interface Plan {
  actions: RolloutAction[];
  /** The name of the ImagePrewarm this round needs, if any. */
  prewarm?: string;
  status: InPlaceRolloutStatus;
  /**
   * When the plan may change with nothing else changing (a pod's minReadySeconds running out, the pre-warm's
   * silence hint): the coordinator looks again then (ms since the epoch).
   */
  wakeAtMs?: number;
}

/** Default progressDeadlineSeconds. */
export const DEFAULT_PROGRESS_DEADLINE_SECONDS = 600;
