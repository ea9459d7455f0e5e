// The seam between planning and doing a restart: per container, who brings the next instance up. The
// standalone strategy (the agent recreates the container itself, standalone-strategy.ts) and the kubelet
// strategy (the agent stops the container or patches its image, and the kubelet recreates it, src/kube/kubelet/)
// are the two implementations, of equal rank. Which one handles a container is decided when the plan is made
// and journaled with it. The executor (restart-executor.ts) runs the loop around them.
import type { ContainerDetail, Pod } from '../runtime/types.js';
import type { ContainerStep, ContainerTarget, Operation, RestartRequest, StrategyName } from './operation.js';
import type { PlannedTarget } from './restart-plan.js';

/** What the executor lends a strategy for one container. */
export interface StepContext {
  /** Epoch ms after which the operation has run out of time. */
  deadline: number;
  /**
   * The old container with its creation config, read at the start; undefined when gone or unreadable, or when
   * the strategy said it does not need it (RestartStrategy.needsOldConfig). At
   * Waiting the executor has already checked that it runs (a container that no longer runs never reaches a
   * strategy).
   */
  old: ContainerDetail | undefined;
  /**
   * Enters a step and journals it before the side effect it announces. sync false skips the directory fsync
   * (for a step whose recovery repeats idempotent calls, when a power loss brings back the record before it).
   */
  step(step: ContainerStep, opts?: { sync?: boolean }): Promise<void>;
  /** Enters a step that records a finished side effect: published now, journaled with the next step. */
  mark(step: ContainerStep): void;
  /**
   * Enters a step of another container of the operation, one this container's call carries along (restarted
   * together with it): published now, journaled with the next step or save().
   */
  markOf(other: ContainerTarget, step: ContainerStep): void;
  /** Journals the record as it is now (a changed id, say); sync false as for step(). */
  save(sync?: boolean): Promise<void>;
  /** Publishes a change of the record to watchers without journaling it. */
  publish(): void;
  /** Shows the operation as Verifying (true) or back to Recreating (false) while this container is verified. */
  verifying(on: boolean): void;
  /**
   * Says that a cancel ended this container's verification early with its replacement running and kept: the
   * operation then ends Cancelled (saying so), never Succeeded.
   */
  cutShort(): void;
  /** Marks that `what` happened now, in the operation's step trace (see step-trace.ts). */
  trace(what: string): void;
  /**
   * The operation was read back from the journal: a side effect that a step carries out while it is being
   * journaled (the standalone create) may have happened although the record does not show the step yet.
   */
  resumed: boolean;
}

/** One way of restarting a container. */
export interface RestartStrategy {
  readonly name: StrategyName;
  /** Every step a container of this strategy can be at, CommonSteps among them; a journal record is held to it. */
  readonly steps: readonly ContainerStep[];
  /**
   * False when advance() does without the old container's creation config (ctx.old is then undefined): the
   * executor checks that the old container runs with a plain status call instead of reading its config.
   */
  readonly needsOldConfig?: boolean;
  /**
   * True when advance() touches nothing before its first ctx.step() is journaled (reads, pulls and Events
   * aside): an operation its caller confirms (admit) then gets no Pending record, its first step's being the
   * first (the standalone strategy creates the replacement before its first step: its operations always get one).
   */
  readonly journalsBeforeTouching?: boolean;
  /**
   * Whether this strategy handles a planned container. Throws an AgentError (touching nothing) for a container
   * it must handle but cannot restart, saying why. May rewrite the target's images to the references its
   * owner uses (the kubelet's pod spec rather than the runtime's resolved id).
   */
  claim(pod: Pod, target: PlannedTarget, req: RestartRequest): Promise<boolean>;
  /**
   * Checks, before anything is recorded, what the strategy will need of a container it claimed (a preStop
   * hook it can parse, say); throws an AgentError (touching nothing) saying what is wrong.
   */
  check?(target: PlannedTarget, req: RestartRequest): void;
  /**
   * Moves one container forward from its journaled step to an end (Done, RolledBack or Failed); safe to call
   * again after a crash at any point. Returns false when the container failed or was rolled back, with its
   * reason set (a constant of reasons.ts).
   */
  advance(op: Operation, t: ContainerTarget, ctx: StepContext): Promise<boolean>;
  /**
   * Told (not awaited) as the executor begins making a container's new image present; result settles when it
   * is (pulled says whether it was downloaded), or fails with the pull.
   */
  pulling?(op: Operation, t: ContainerTarget, result: Promise<{ pulled: boolean }>): void;
  /**
   * Told (not awaited) once a new operation is admitted, before anything is touched: what only reads or announces
   * may begin (the kubelet strategy's Pulled event for an image present). present(image) says whether the look
   * begun for the image found it (undefined when none is under way).
   */
  admitted?(op: Operation, present?: (image: string) => Promise<boolean> | undefined): void;
  /** Told once an operation that had containers of this strategy reached a terminal state. */
  finished?(op: Operation): Promise<void>;
  /**
   * Whether a container of an ended operation still has work this strategy left until after the operation was
   * reported (the old container's removal); its record is kept until cleanup() has done it.
   */
  pending?(t: ContainerTarget): boolean;
  /**
   * Does the work pending() reports, after the operation was reported, journaled so that a crash still gets it
   * done (the next agent calls it again from the record); safe to call again.
   */
  cleanup?(op: Operation, t: ContainerTarget, ctx: StepContext): Promise<void>;
}

/** The strategy a planned container names (standalone when it names none), if it is among strategies. */
export function strategyNamed(strategies: readonly RestartStrategy[], t: { strategy?: string }): RestartStrategy | undefined {
  return strategies.find((s) => s.name === (t.strategy ?? 'standalone'));
}
