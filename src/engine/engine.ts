// The restart engine: takes a request through its named pieces (the planner resolves and plans it, the caller
// admits it, the store journals it, the scheduler runs it in its turn with the executor), resumes unfinished
// operations from the journal at start-up, and drains on shutdown.
import { EventEmitter, setMaxListeners } from 'node:events';
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Container, Pod } from '../runtime/types.js';
import type { ExecutorDeps } from './executor-deps.js';
import { FirstReader } from './first-reads.js';
import type { ImagePuller } from './image-puller.js';
import { Journal } from './journal.js';
import { MIN_ID_PREFIX } from '../id-prefix.js';
import { OperationScheduler } from './operation-scheduler.js';
import { JournaledOperations } from './operation-store.js';
import { isTerminal, type Operation, type RestartRequest } from './operation.js';
import { findOrphans, sweepOrphans } from './orphans.js';
import { RefusalReasons, Reasons } from './reasons.js';
import { RestartExecutor } from './restart-executor.js';
import { RestartIntake, type RestartOptions } from './restart-intake.js';
import { RestartPlanner } from './restart-planner.js';
import type { RestartStrategy } from './restart-strategy.js';
import { StandaloneStrategy } from './standalone-strategy.js';
import { StepTrace } from './step-trace.js';


/** Construction parameters of the engine. */
export interface EngineDeps {
  runtime: Runtime;
  puller: ImagePuller;
  journal: Journal;
  clock: Clock;
  log: Logger;
  /** Finished operations kept for `ops`/`get` (oldest dropped first). */
  retention?: number;
  /** Operations executing at once node-wide; the others wait Pending in arrival order (default 4). */
  maxParallel?: number;
  /** Unfinished operations (running and waiting) at most; a restart beyond is refused (default 256). */
  maxUnfinished?: number;
  /** Called for each journal record set aside at start (not readable as an operation). */
  onCorruptRecord?: (file: string, reason: string, movedTo: string | undefined) => void;
  /**
   * Called at start with the containers an operation labelled that no journal record explains (those this agent
   * removes itself are not among them, see findOrphans).
   */
  onOrphans?: (orphans: Container[]) => void;
  /** This agent's identity (its state directory's agent-id), put on the replacements it creates (AGENT_LABEL). */
  agentId?: string;
  /**
   * Strategies tried, in order, for each planned container before the standalone one (Kubernetes mode: the
   * kubelet strategy, which claims every kubelet-managed container). With any, the plan may name
   * kubelet-managed containers.
   */
  strategies?: RestartStrategy[];
  /**
   * The node's pods are the kubelet's (Kubernetes mode): a request naming NAMESPACE/NAME lists that pod's
   * sandboxes alone, by the kubelet's labels, and every pod only when the runtime has none of them.
   */
  kubeletPods?: boolean;
  /** Called after each container step is journaled. */
  afterStep?: ExecutorDeps['afterStep'];
  /**
   * Called when the journal cannot be written while an operation runs. The daemon exits so that a restart
   * recovers from the last good record; without a handler the error propagates.
   */
  onFatal?: (err: unknown) => void;
  /** Where the steps of each operation are timed (default: one of its own on log). */
  trace?: StepTrace;
}

/** A pod and its containers, as shown by ListPods. */
export interface PodView {
  pod: Pod;
  containers: Container[];
}

/** Emits 'change' (Operation) whenever an operation's record changes, and 'drained' once drain() is done. */
export class Engine extends EventEmitter {
  private readonly drainAbort = new AbortController();
  /** The records, their journal writes and what watchers are told (the executor's OperationStore). */
  private readonly store: JournaledOperations;
  private readonly executor: RestartExecutor;
  private readonly scheduler: OperationScheduler;
  /** A request's way in: resolved and planned, admitted, journaled, scheduled. */
  private readonly intake: RestartIntake;
  private isDraining = false;
  /** The step timings of operations (logged at debug level as each ends); callers before the engine add theirs. */
  readonly trace: StepTrace;

  constructor(private readonly d: EngineDeps) {
    super();
    const trace = (this.trace = d.trace ?? new StepTrace(d.log));
    this.setMaxListeners(0);
    // Every operation waiting for a slot listens to the drain signal.
    setMaxListeners(0, this.drainAbort.signal);
    const draining = () => this.isDraining;
    const drainSignal = this.drainAbort.signal;
    const { runtime, clock, log } = d;
    // Every strategy, in the order they are asked to claim a container: the given ones, then standalone.
    const strategies: RestartStrategy[] = [...(d.strategies ?? []), new StandaloneStrategy({ runtime, clock, log, draining, drainSignal, agentId: d.agentId })];
    const store = (this.store = new JournaledOperations({ journal: d.journal, log, retention: d.retention ?? 500, changed: (op) => this.emit('change', op), onFatal: d.onFatal }));
    const planner = new RestartPlanner({ runtime, clock, strategies, allowKubelet: (d.strategies?.length ?? 0) > 0, kubeletPods: d.kubeletPods, trace });
    const reads = new FirstReader({ runtime, clock, log, strategies, draining, drainSignal, trace });
    const executor = (this.executor = new RestartExecutor({ runtime, puller: d.puller, clock, log, store, planner, reads, draining, drainSignal, afterStep: d.afterStep, strategies, trace }));
    const scheduler = (this.scheduler = new OperationScheduler({ executor, store, reads, clock, log, maxParallel: d.maxParallel ?? 4, draining, drainSignal }));
    this.intake = new RestartIntake({ puller: d.puller, clock, store, planner, reads, scheduler, strategies, trace, maxUnfinished: d.maxUnfinished ?? 256, draining });
  }

  /** Loads the journal and resumes every unfinished operation, in the order they were submitted. */
  async start(): Promise<void> {
    await this.d.journal.open();
    const setAside = new Set<string>();
    const all = await this.d.journal.readAll((file, err, movedTo) => {
      setAside.add(file.replace(/\.json$/, ''));
      const reason = err instanceof Error ? err.message : String(err);
      this.d.log.error('journal record is not a readable operation; set aside', { file, movedTo: movedTo ?? '(could not be moved)', error: reason });
      this.d.onCorruptRecord?.(file, reason, movedTo);
    });
    this.store.load(all);
    const unfinished = all.filter((op) => !isTerminal(op.state));
    // Before anything resumes (and creates containers of its own).
    await sweepOrphans(this.orphanDeps(), setAside)
      .then((orphans) => this.d.onOrphans?.(orphans))
      .catch((err: unknown) => this.d.log.warn('cannot look for orphaned containers', { error: String(err) }));
    for (const op of unfinished) {
      this.d.log.info('resuming operation from journal', { op: op.id, pod: op.podName, state: op.state });
      this.scheduler.schedule(op, true);
    }
    // Ended operations whose old containers were still to be removed when the last agent stopped.
    for (const op of all.filter((o) => isTerminal(o.state) && this.executor.pendingCleanup(o))) {
      this.d.log.info('finishing the cleanup of an ended operation from journal', { op: op.id, pod: op.podName, state: op.state });
      this.scheduler.schedule(op, true);
    }
    await this.scheduler.prune();
  }

  /**
   * Containers created by an operation (labelled with it) that never started, while no unfinished operation
   * in the journal owns them: left by a record that was lost or set aside. They are reported, not removed
   * (another agent with its own state directory may share the runtime).
   */
  findOrphans(): Promise<Container[]> {
    return findOrphans(this.orphanDeps());
  }

  private orphanDeps() {
    return { runtime: this.d.runtime, log: this.d.log, known: (id: string) => this.store.exact(id), agentId: this.d.agentId };
  }

  /** Pods and their containers on this node. */
  async listPods(): Promise<PodView[]> {
    const [pods, containers] = await Promise.all([this.d.runtime.listPods(), this.d.runtime.listContainers()]);
    return pods.map((pod) => ({ pod, containers: containers.filter((c) => c.podId === pod.id) }));
  }

  /**
   * Validates a request against the node, records it Pending and queues it. Refusals touch nothing. With
   * dryRun, returns the planned operation (no id) without recording or running it. With id, the operation
   * gets that id, and a request whose id is already recorded returns that record instead of running twice.
   * With admit, the planned operation is recorded only once admit() resolves true (the caller may, meanwhile,
   * make sure nobody else runs it); false ends it with an Aborted error, nothing recorded or touched. Admitted, an
   * operation whose strategies journal before touching is queued without a Pending record (see recorded()).
   */
  restart(req: RestartRequest, opts: RestartOptions = {}): Promise<Operation> {
    return this.intake.take(req, opts);
  }

  /** One operation, by id or unique prefix of at least MIN_ID_PREFIX characters; NotFound when unknown. */
  get(id: string): Operation {
    return this.store.get(id);
  }

  /**
   * Whether an operation the engine knows has a record in the journal: false only between the admission of an
   * operation that gets no Pending record (see RestartIntake.record) and its first journal write.
   */
  recorded(id: string): boolean {
    return this.store.recorded(id);
  }

  /** Whether an operation with this exact id is known (recorded, or admitted and about to be). */
  has(id: string): boolean {
    return this.store.exact(id) !== undefined;
  }

  /**
   * All known operations, newest first, optionally of one pod: by name, or by sandbox id or id prefix of at
   * least MIN_ID_PREFIX characters (as `pods` prints them), before or after the operation.
   */
  list(podFilter?: string): Operation[] {
    const f = podFilter?.trim() ?? '';
    const byId = (id: string | undefined) => !!id && (id === f || (f.length >= MIN_ID_PREFIX && /^[0-9a-f]+$/.test(f) && id.startsWith(f)));
    return this.store
      .all()
      .filter((o) => !f || o.podName === f || byId(o.podId) || byId(o.podAfter?.podId))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  /** Asks an operation to stop at its next safe point; the old config keeps (or gets back) running. */
  async cancel(id: string): Promise<Operation> {
    const op = this.get(id);
    if (isTerminal(op.state)) throw new AgentError('FailedPrecondition', `operation ${op.id} has already ended (${op.state})`, { reason: RefusalReasons.OperationEnded });
    op.cancelRequested = true;
    if (op.state === 'Pending' && !this.scheduler.isExecuting(op.id)) {
      // Still waiting for its pod or for a slot: nothing was touched, so it ends here.
      const now = new Date(this.d.clock.now()).toISOString();
      op.state = 'Cancelled';
      op.error = `operation ${op.id} was cancelled before it started; nothing was changed`;
      op.errorKind = 'Cancelled';
      op.reason = Reasons.Cancelled;
      op.updatedAt = now;
      op.finishedAt = now;
    }
    // The answer describes the operation as the cancel found it: the executor may reach its next safe point, and
    // even end, while the journal write below is under way.
    const accepted = structuredClone(op);
    await this.store.persist(op);
    // A pull the operation waits on stops now, unless another caller waits on it too.
    this.store.cancel(op.id, new AgentError('Cancelled', `operation ${op.id} was cancelled`));
    return accepted;
  }

  /**
   * Stops taking operations; running ones continue to a safe point. Resolves when none runs, or after
   * timeoutMs with the ids of those still running (their journal records resume them at the next start).
   */
  async drain(timeoutMs?: number): Promise<string[]> {
    this.isDraining = true;
    this.drainAbort.abort(new AgentError('Unavailable', 'agent is shutting down'));
    const left = await this.scheduler.idle(timeoutMs);
    this.emit('drained');
    return left;
  }

  /** Whether the engine is draining. */
  get draining(): boolean {
    return this.isDraining;
  }
}
