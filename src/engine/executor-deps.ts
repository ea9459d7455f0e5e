// What the restart executor (restart-executor.ts) is given by the engine that owns it: the store it asks about
// the operation's record, the planner that plans a queued operation again, and the first reads begun for it.
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import type { FirstReader } from './first-reads.js';
import type { ImagePuller } from './image-puller.js';
import type { ContainerStep, ContainerTarget, Operation } from './operation.js';
import type { RestartStrategy } from './restart-strategy.js';
import type { StepTrace } from './step-trace.js';

/** What the executor asks of the owner of the operations' records (the engine's JournaledOperations). */
export interface OperationStore {
  /**
   * Journals (atomically) and publishes a changed operation. With sync the record is also fsynced, so it
   * survives a power loss; without, it survives any crash of the agent process.
   */
  record(op: Operation, sync: boolean): Promise<void>;
  /**
   * The write of the operation's first record while it is under way (RestartIntake.record begins the operation beside
   * it): every later write waits for it, and none is made when it failed (see Unrecorded).
   */
  firstRecord(op: Operation): Promise<void> | undefined;
  /** Publishes a change to watchers without journaling it (the next record carries it). */
  publish(op: Operation): void;
  /** Aborts when the operation is cancelled (cuts its pulls short, unless another caller waits on them). */
  cancelled(op: Operation): AbortSignal;
}

/** Plans an operation that waited its turn again (the engine's RestartPlanner). */
export interface TurnPlanner {
  /**
   * Plans op again on the pod as it is now (an operation that waited behind others on the same pod, or was
   * resumed while still Pending): its containers may have changed meanwhile. Throws when the request no longer
   * fits the pod.
   */
  planOnPodNow(op: Operation): Promise<void>;
}

/** What the executor needs. */
export interface ExecutorDeps {
  runtime: Runtime;
  puller: ImagePuller;
  clock: Clock;
  log: Logger;
  store: OperationStore;
  /** Without one, an operation that waited its turn runs as it was planned. */
  planner?: TurnPlanner;
  /** The first reads of each operation (old containers, pod IP); the engine begins a new one's as it is planned. */
  reads: FirstReader;
  /** True once the agent is draining. */
  draining(): boolean;
  /** Aborts when the agent starts draining (cuts pulls short). */
  drainSignal?: AbortSignal;
  /** Called after each container step is journaled (fault injection in tests, tracing). */
  afterStep?: (op: Operation, t: ContainerTarget, step: ContainerStep) => void;
  /** The strategies, by the name a planned container carries (see restart-strategy.ts); standalone among them. */
  strategies: RestartStrategy[];
  /** Where the time of each step is marked (see step-trace.ts). */
  trace?: StepTrace;
}
