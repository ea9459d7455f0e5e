// Fixed reasons carried by failed, rolled back and refused operations (the `reason` field of the API), so a
// caller can branch on a constant instead of parsing a message.

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
