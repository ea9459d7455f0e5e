// An in-place restart operation and its state machine.
//
//                 submit
//                   |
//                   v
//      +-------- Pending ---------------> Failed     (the pod or a container changed meanwhile)
//      |            |
//      | cancel     v
//      +------- Pulling ----------------> Failed     (a pull failed: nothing was stopped)
//      |            |
//      v            v
//  Cancelled <-- Recreating ------------> Failed    (a replacement failed; the old config runs
//  (at a safe     |   ^   \                           again: that container's step is RolledBack)
//   point)        v   |    \--cancel--> RolledBack   (a created replacement was discarded before
//              Verifying                              the old container was stopped)
//                 |   (then the next container)
//                 v
//             Succeeded
//
// Per container (one at a time, in the order given), the strategy the container was planned with moves it
// from Waiting to one of its ends (Done, RolledBack, Failed); the steps between are the strategy's own
// (standalone-strategy.ts here, src/kube/kubelet/ for the kubelet's). Each step is journaled before its side
// effect; recovery reads the step and the runtime's facts.

/** The strategies a container can be restarted with (restart-strategy.ts). */
export type StrategyName = 'standalone' | 'kubelet';

/** Operation-level states. */
export const OperationStates = [
  'Pending',
  'Pulling',
  'Recreating',
  'Verifying',
  'Succeeded',
  'Failed',
  'RolledBack',
  'Cancelled',
] as const;
/** One of OperationStates. */
export type OperationState = (typeof OperationStates)[number];

/**
 * The per-container steps every strategy has: where a container begins, the verification the executor shows
 * as the operation's Verifying state, and the ends. A strategy adds its own (RestartStrategy.steps).
 */
export const CommonSteps = ['Waiting', 'Verifying', 'Verified', 'Done', 'RollingBack', 'RolledBack', 'Failed'] as const;
/** One of CommonSteps. */
export type CommonStep = (typeof CommonSteps)[number];
/** A container's step: one of CommonSteps or one of its strategy's own. */
export type ContainerStep = string;

/** A step and when it was entered. */
export interface StepRecord {
  step: ContainerStep;
  at: string;
  /** What the step waited on and for how long, once it knows (the kubelet strategy's Draining and Verified). */
  detail?: string;
}

/** One container being recreated. */
export interface ContainerTarget {
  /** Name in the pod. */
  name: string;
  /** Who makes the next instance, chosen when the plan is made; absent means standalone. */
  strategy?: StrategyName;
  /** What the strategy last saw while it waited for the next instance (the kubelet's back-off, say). */
  waiting?: string;
  oldId: string;
  /** Docker container name of the old one (for renames); '' on CRI. */
  oldRuntimeName: string;
  oldImage: string;
  newImage: string;
  /** CRI attempt the replacement is created with. */
  newAttempt: number;
  newId: string;
  /** Id of the container started again from the old config on rollback (may equal oldId on Docker). */
  rollbackId: string;
  step: ContainerStep;
  steps: StepRecord[];
  exitCode?: number;
  error?: string;
  /** Time from the stop call on the old container to the replacement's start returning, ms. */
  downtimeMs?: number;
  /** Why this container failed or was rolled back (a constant of reasons.ts). */
  reason?: string;
  /** Kubernetes mode: what clients behind a Service saw (drained, the only endpoint, or restarted undrained). */
  traffic?: string;
  /** Kubernetes mode: longest time a Service of the pod had no ready endpoint during the restart, ms. */
  unservedMs?: number;
}

/** Progress of one image the operation needs. */
export interface ImagePull {
  image: string;
  bytesDone: number;
  bytesTotal: number;
  done: boolean;
  /** False when the image was already present. */
  pulled: boolean;
}

/**
 * What a caller asked for. A strategy may read fields of its own that its caller adds (the kubelet's:
 * src/kube/kubelet/steps.ts); the journal keeps them with the rest.
 */
export interface RestartRequest {
  /** Pod as given: ns/name, sandbox id or prefix, docker/<name>. */
  pod: string;
  containers: string[];
  /** New image per container name; absent means the same image. */
  images: Record<string, string>;
  graceSeconds: number;
  minReadyMs: number;
  timeoutMs: number;
  /** Stop without running the preStop hook (it is hung, or the container is being replaced because of it). */
  skipPreStop?: boolean;
}

/** The agent's values for what a restart request leaves out (its --grace, --min-ready, --operation-timeout). */
export type RestartDefaults = Pick<RestartRequest, 'graceSeconds' | 'minReadyMs' | 'timeoutMs'>;

/** An operation record: what is stored in the journal and returned by the API. */
export interface Operation {
  id: string;
  podId: string;
  podName: string;
  podIp: string;
  state: OperationState;
  request: RestartRequest;
  containers: ContainerTarget[];
  /** The images the operation makes present, with their progress. */
  pulls?: ImagePull[];
  createdAt: string;
  updatedAt: string;
  finishedAt?: string;
  error?: string;
  errorKind?: string;
  /** Why the operation did not succeed (a constant of reasons.ts). */
  reason?: string;
  cancelRequested?: boolean;
  /** The settings the caller gave; the others in `request` are the agent's defaults. */
  requested?: RequestedSettings;
  /** The pod read again after success: its sandbox id and IP then (absent when not read). */
  podAfter?: { podId: string; podIp: string };
}

/** Restart settings as the caller gave them (absent: not given). */
export interface RequestedSettings {
  graceSeconds?: number;
  minReadyMs?: number;
  timeoutMs?: number;
}

const TERMINAL: ReadonlySet<OperationState> = new Set(['Succeeded', 'Failed', 'RolledBack', 'Cancelled']);

/** Whether an operation has ended. */
export function isTerminal(state: OperationState): boolean {
  return TERMINAL.has(state);
}

const ALLOWED: Record<OperationState, OperationState[]> = {
  Pending: ['Pulling', 'Cancelled', 'Failed'],
  Pulling: ['Recreating', 'Failed', 'Cancelled'],
  Recreating: ['Verifying', 'Recreating', 'Failed', 'RolledBack', 'Cancelled', 'Succeeded'],
  Verifying: ['Recreating', 'Succeeded', 'Failed', 'RolledBack', 'Cancelled'],
  Succeeded: [],
  Failed: [],
  RolledBack: [],
  Cancelled: [],
};

/** Whether the state machine allows going from one state to another. */
export function canTransition(from: OperationState, to: OperationState): boolean {
  return from === to || ALLOWED[from].includes(to);
}
