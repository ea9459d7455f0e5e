// Fixed reasons carried by failed, rolled back and refused operations, so a caller can branch on a constant
// instead of parsing a message. Each is set where the failure happens, and the same word reaches every output:
// the API's operation view, the ContainerRestart status and its condition, the pod's Warning Event, the
// metrics' reason label, and the pre-warm status (docs/reference.md lists them).

/** Why a running operation or one of its containers failed, was rolled back or was cancelled. */
export const Reasons = {
  PullFailed: 'ImagePullFailed',
  CreateFailed: 'CreateContainerFailed',
  StartFailed: 'StartContainerFailed',
  ExitedEarly: 'ReplacementExitedDuringMinReady',
  PreStopHookError: 'PreStopHookError',
  RollbackFailed: 'RollbackFailed',
  Cancelled: 'Cancelled',
  Deadline: 'DeadlineExceeded',
  Interrupted: 'ContainerChangedMeanwhile',
  PodChanged: 'PodChangedWhileQueued',
  ReplacementFailed: 'ReplacementFailed',
} as const;

/** Why a request was refused before anything was touched. */
export const RefusalReasons = {
  InvalidRequest: 'InvalidRequest',
  DeadlineTooShort: 'DeadlineTooShort',
  PodNotFound: 'PodNotFound',
  PodAmbiguous: 'PodIdPrefixAmbiguous',
  PodNotReady: 'PodNotReady',
  ContainerNotFound: 'ContainerNotFound',
  ContainerNotRunning: 'ContainerNotRunning',
  ContainerAmbiguous: 'ContainerNameAmbiguous',
  KubeletManaged: 'KubeletManaged',
  /** The kubelet would not bring the container back (its restart policy, an init container, a static pod's image). */
  KubeletWouldNotRestart: 'KubeletWouldNotRestart',
  /** The pod on the node is not the API server's (unknown there, another uid, being deleted). */
  PodNotInApiServer: 'PodNotInApiServer',
  /** The request's creator no longer exists (its ServiceAccount deleted, or re-created under another uid). */
  RequesterGone: 'RequesterGone',
  /** No agent took the request within its spec.unclaimedTTLSeconds of its creation. */
  UnclaimedExpired: 'UnclaimedRequestExpired',
  /** The pod is a static pod (a mirror pod), and the request does not carry the cluster admin's opt-in. */
  StaticPod: 'StaticPodRefused',
  /** The API server's admission refused the pod write as the requester (a dry run, before anything stopped). */
  AdmissionRefused: 'AdmissionRefused',
  /** The request names an option this agent does not implement. */
  Unsupported: 'UnsupportedRequest',
  /** The request's creator may not do what it asks (k8s/access-review.ts). */
  Forbidden: 'Forbidden',
  /** The agent has no record of an operation it had taken (its journal was lost); it is not run again. */
  JournalLost: 'OperationRecordLost',
  OwnsPodNetwork: 'ContainerOwnsPodNetwork',
  InvalidPreStopHook: 'InvalidPreStopHook',
  ShuttingDown: 'AgentShuttingDown',
  OperationNotFound: 'OperationNotFound',
  OperationIdTooShort: 'OperationIdPrefixTooShort',
  OperationAmbiguous: 'OperationIdPrefixAmbiguous',
  OperationEnded: 'OperationEnded',
} as const;

/** One of Reasons or RefusalReasons. */
export type Reason = (typeof Reasons)[keyof typeof Reasons] | (typeof RefusalReasons)[keyof typeof RefusalReasons];

const REFUSALS: ReadonlySet<string> = new Set(Object.values(RefusalReasons));

/** Whether a reason says the request was refused before anything was touched. */
export function isRefusal(reason: string | undefined): boolean {
  return reason !== undefined && REFUSALS.has(reason);
}
