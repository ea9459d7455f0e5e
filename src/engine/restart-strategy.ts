// The seam between planning and doing a restart: per container, who brings the next instance up. The
// standalone strategy (the agent recreates the container itself, restart-executor.ts) and the kubelet
// strategy (the agent stops the container or patches its image, and the kubelet recreates it, src/kube/) are
// the two implementations. Which one handles a container is decided when the plan is made and journaled with it.
import type { ContainerDetail, Pod } from '../runtime/types.js';
import type { ContainerStep, ContainerTarget, Operation, RestartRequest } from './operation.js';
import type { PlannedTarget } from './restart-plan.js';

/** The strategies a container can be restarted with. */
export type StrategyName = 'standalone' | 'kubelet';

/** What the executor lends a strategy for one container. */
export interface StepContext {
  /** Epoch ms after which the operation has run out of time. */
  deadline: number;
  /** The old container with its creation config, read at the start; undefined when gone or unreadable. */
  old: ContainerDetail | undefined;
  /** Enters a step and journals it before the side effect it announces. */
  step(step: ContainerStep): Promise<void>;
  /** Enters a step that records a finished side effect: published now, journaled with the next step. */
  mark(step: ContainerStep): void;
  /** Publishes a change of the record to watchers without journaling it. */
  publish(): void;
  /**
   * Says that a cancel ended this container's verification early with its replacement running and kept: the
   * operation then ends Cancelled (saying so), never Succeeded.
   */
  cutShort(): void;
}

/** One way of restarting a container. */
export interface RestartStrategy {
  readonly name: StrategyName;
  /**
   * Whether this strategy handles a planned container. Throws an AgentError (touching nothing) for a container
   * it must handle but cannot restart, saying why. May rewrite the target's images to the references its
   * owner uses (the kubelet's pod spec rather than the runtime's resolved id).
   */
  claim(pod: Pod, target: PlannedTarget, req: RestartRequest): Promise<boolean>;
  /**
   * Moves one container forward from its journaled step to an end (Done, RolledBack or Failed); safe to call
   * again after a crash at any point. Returns false when the container failed or was rolled back.
   */
  advance(op: Operation, t: ContainerTarget, ctx: StepContext): Promise<boolean>;
  /**
   * Told (not awaited) as the executor begins making a container's new image present; result settles when it
   * is (pulled says whether it was downloaded), or fails with the pull.
   */
  pulling?(op: Operation, t: ContainerTarget, result: Promise<{ pulled: boolean }>): void;
  /** Told once an operation that had containers of this strategy reached a terminal state. */
  finished?(op: Operation): Promise<void>;
}
