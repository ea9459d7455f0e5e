// The values of an operation as the agent API sends them (proto/inplace/v1/agent.proto): the states, the
// steps, an image pull, and the reasons a client branches on. Clients (inplacectl) speak these; convert.ts
// checks at compile time that the engine's own types send nothing else.

/** An operation's state on the wire. */
export type OperationStateName = 'Pending' | 'Pulling' | 'Recreating' | 'Verifying' | 'Succeeded' | 'Failed' | 'RolledBack' | 'Cancelled';

/** A container's step on the wire: a common step or one of its strategy's own (`Draining`, `Patched`...). */
export type StepName = string;

/** A step of a container and when it was entered, as sent. */
export interface StepView {
  step: StepName;
  at: string;
  /** What the step waited on and for how long, once known. */
  detail?: string;
}

/** An image pull of an operation, as sent. */
export interface ImagePullView {
  image: string;
  bytesDone: number;
  bytesTotal: number;
  done: boolean;
  /** False when the image was already present. */
  pulled: boolean;
}

const FINISHED: ReadonlySet<OperationStateName> = new Set(['Succeeded', 'Failed', 'RolledBack', 'Cancelled']);

/** Whether an operation in this state has ended (nothing more will change). */
export function isFinishedState(state: OperationStateName): boolean {
  return FINISHED.has(state);
}

/** Reasons a client tells apart: a refusal for the container's invalid preStop label, not for the request. */
export const ClientReasons = {
  InvalidPreStopHook: 'InvalidPreStopHook',
} as const;
