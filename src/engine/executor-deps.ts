// What the restart executor (restart-executor.ts) is given by the engine that owns it.
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ImagePuller } from './image-puller.js';
import type { ContainerStep, ContainerTarget, Operation } from './operation.js';
import type { RestartStrategy } from './restart-strategy.js';
import type { StepTrace } from './step-trace.js';

/** What the executor needs. */
export interface ExecutorDeps {
  runtime: Runtime;
  puller: ImagePuller;
  clock: Clock;
  log: Logger;
  /**
   * Journals (atomically) and publishes a changed operation. With sync the record is also fsynced, so it
   * survives a power loss; without, it survives any crash of the agent process.
   */
  save(op: Operation, sync: boolean): Promise<void>;
  /**
   * The write of the operation's first record while it is under way (Engine.record begins the operation beside
   * it): every later write waits for it, and none is made when it failed (see Unrecorded).
   */
  firstRecord?: (op: Operation) => Promise<void> | undefined;
  /** Publishes a change to watchers without journaling it (the next save carries it). */
  publish(op: Operation): void;
  /** True once the agent is draining. */
  draining(): boolean;
  /** Aborts when the agent starts draining (cuts pulls short). */
  drainSignal?: AbortSignal;
  /**
   * Plans the operation again from the node's current facts (an operation that waited behind others on the
   * same pod, or was resumed while still Pending). Throws when the request no longer fits the pod.
   */
  replan?: (op: Operation) => Promise<void>;
  /** Called after each container step is journaled (fault injection in tests, tracing). */
  afterStep?: (op: Operation, t: ContainerTarget, step: ContainerStep) => void;
  /** Aborts when the operation is cancelled (cuts its pulls short, unless another caller waits on them). */
  cancelSignal?: (op: Operation) => AbortSignal;
  /** The strategies, by the name a planned container carries (see restart-strategy.ts); standalone among them. */
  strategies: RestartStrategy[];
  /** Where the time of each step is marked (see step-trace.ts). */
  trace?: StepTrace;
}
