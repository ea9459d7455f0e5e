// The restart engine: validates requests, keeps operation records, serializes operations per pod, runs them
// with the executor, resumes unfinished ones from the journal at start-up, and drains on shutdown.
import { EventEmitter, setMaxListeners } from 'node:events';
import { randomUUID } from 'node:crypto';
import { AgentError } from '../errors.js';
import { quote } from '../quote.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Container, ContainerState, Pod } from '../runtime/types.js';
import type { ImagePuller } from './image-puller.js';
import { Journal } from './journal.js';
import { KeyedQueue } from './keyed-queue.js';
import { OperationSlots } from './operation-slots.js';
import { isTerminal, type ContainerTarget, type Operation, type RequestedSettings, type RestartRequest } from './operation.js';
import { resolvePod } from './pod-resolver.js';
import { MIN_ID_PREFIX } from '../id-prefix.js';
import { RefusalReasons, Reasons } from './reasons.js';
import { AGENT_LABEL, OPERATION_LABEL, planRestart } from './restart-plan.js';
import { Paused } from './paused.js';
import { RestartExecutor, type ExecutorDeps } from './restart-executor.js';
import type { RestartStrategy } from './restart-strategy.js';
import { StandaloneStrategy } from './standalone-strategy.js';
import { StepTrace } from './step-trace.js';

/** How many pod arguments record() remembers the sandbox of. */
const LAST_PODS = 256;

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
  private readonly ops = new Map<string, Operation>();
  private readonly drainAbort = new AbortController();
  private readonly queue = new KeyedQueue();
  private readonly running = new Set<Promise<void>>();
  /** Per running operation: aborted by cancel() so that a pull it waits on stops (see ExecutorDeps.cancelSignal). */
  private readonly cancels = new Map<string, AbortController>();
  /** Per operation: a change not told yet (see announce). */
  private readonly announcing = new Map<string, NodeJS.Immediate>();
  /** Ids of the operations executing now (holding a slot). */
  private readonly executing = new Set<string>();
  /** Operations known and admitted but not yet written to the journal (see record). */
  private readonly unrecorded = new Set<string>();
  /** The first record's write of each operation that began beside it (see record and ExecutorDeps.firstRecord). */
  private readonly firstWrites = new Map<string, Promise<void>>();
  /** The sandbox id each pod argument of a recent request resolved to, oldest first (see record). */
  private readonly lastPodOf = new Map<string, string>();
  /** Operations whose first record failed before they began to execute: they never will (see record). */
  private readonly abandoned = new Set<string>();
  private readonly executor: RestartExecutor;
  private isDraining = false;
  private readonly retention: number;
  private readonly slots: OperationSlots;
  private readonly maxUnfinished: number;
  /** Every strategy, in the order they are asked to claim a container: the given ones, then standalone. */
  private readonly strategies: RestartStrategy[];
  /** The step timings of operations (logged at debug level as each ends); callers before the engine add theirs. */
  readonly trace: StepTrace;

  constructor(private readonly d: EngineDeps) {
    super();
    this.trace = d.trace ?? new StepTrace(d.log);
    this.setMaxListeners(0);
    // Every operation waiting for a slot listens to the drain signal.
    setMaxListeners(0, this.drainAbort.signal);
    this.retention = d.retention ?? 500;
    this.slots = new OperationSlots(d.maxParallel ?? 4);
    this.maxUnfinished = d.maxUnfinished ?? 256;
    const draining = () => this.isDraining;
    this.strategies = [...(d.strategies ?? []), new StandaloneStrategy({ runtime: d.runtime, clock: d.clock, log: d.log, draining, drainSignal: this.drainAbort.signal, agentId: d.agentId })];
    this.executor = new RestartExecutor({
      runtime: d.runtime,
      puller: d.puller,
      clock: d.clock,
      log: d.log,
      save: (op, sync) => this.persistOrDie(op, sync),
      firstRecord: (op) => this.firstWrites.get(op.id),
      publish: (op) => this.announce(op),
      draining,
      drainSignal: this.drainAbort.signal,
      replan: (op) => this.replan(op),
      afterStep: d.afterStep,
      cancelSignal: (op) => this.cancelController(op.id).signal,
      strategies: this.strategies,
      trace: this.trace,
    });
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
    for (const op of all) this.ops.set(op.id, op);
    const unfinished = all.filter((op) => !isTerminal(op.state));
    // Before anything resumes (and creates containers of its own).
    await this.reportOrphans(setAside).catch((err: unknown) => this.d.log.warn('cannot look for orphaned containers', { error: String(err) }));
    for (const op of unfinished) {
      this.d.log.info('resuming operation from journal', { op: op.id, pod: op.podName, state: op.state });
      this.schedule(op, true);
    }
    // Ended operations whose old containers were still to be removed when the last agent stopped.
    for (const op of all.filter((o) => isTerminal(o.state) && this.executor.pendingCleanup(o))) {
      this.d.log.info('finishing the cleanup of an ended operation from journal', { op: op.id, pod: op.podName, state: op.state });
      this.schedule(op, true);
    }
    await this.prune();
  }

  /**
   * Containers created by an operation (labelled with it) that never started, while no unfinished operation
   * in the journal owns them: left by a record that was lost or set aside. They are reported, not removed
   * (another agent with its own state directory may share the runtime).
   */
  async findOrphans(): Promise<Container[]> {
    const all = await this.d.runtime.listContainers();
    return all.filter((c) => {
      const id = c.labels[OPERATION_LABEL];
      if (!id || c.state !== 'created') return false;
      const op = this.ops.get(id);
      return !op || isTerminal(op.state);
    });
  }

  /**
   * Reports the orphans (findOrphans), but removes those this agent made for an operation of which no record was
   * ever written, not even one set aside (setAside: the ids of records that could not be read): an operation
   * begins beside its first record (see record), so an agent that died in between leaves its replacement,
   * created and never started, and nothing else. Another agent's, or one whose record was lost, is reported.
   */
  private async reportOrphans(setAside: Set<string>): Promise<void> {
    const orphans: Container[] = [];
    for (const c of await this.findOrphans()) {
      const opId = c.labels[OPERATION_LABEL];
      if (!this.d.agentId || c.labels[AGENT_LABEL] !== this.d.agentId || this.ops.has(opId) || setAside.has(opId)) {
        orphans.push(c);
        continue;
      }
      try {
        await this.d.runtime.removeContainer(c.id);
        this.d.log.info('removed the replacement of an operation that ended before its first record was written', { container: c.id, name: c.name, pod: c.podId, operation: opId });
      } catch (err) {
        if (!AgentError.is(err, 'NotFound')) orphans.push(c);
      }
    }
    for (const c of orphans) {
      this.d.log.warn('orphaned container: created by an operation that no journal record explains; remove it when you are sure', {
        container: c.id,
        name: c.name,
        pod: c.podId,
        operation: c.labels[OPERATION_LABEL],
      });
    }
    this.d.onOrphans?.(orphans);
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
  async restart(req: RestartRequest, opts: { dryRun?: boolean; id?: string; requested?: RequestedSettings; admit?: () => Promise<boolean> } = {}): Promise<Operation> {
    const known = opts.id ? this.ops.get(opts.id) : undefined;
    if (known && !opts.dryRun) return known;
    const id = opts.id ?? randomUUID();
    if (!opts.dryRun) this.trace.mark(id, 'request');
    try {
      return await this.record(id, req, opts);
    } catch (err) {
      this.trace.drop(id);
      throw err;
    }
  }

  private async record(id: string, req: RestartRequest, opts: { dryRun?: boolean; id?: string; requested?: RequestedSettings; admit?: () => Promise<boolean> }): Promise<Operation> {
    if (this.isDraining) throw new AgentError('Unavailable', 'agent is shutting down and takes no new operations', { reason: RefusalReasons.ShuttingDown });
    // Whether the images the request names are present is looked up at once (a read), beside the planning: the
    // look is the one the operation's pull check takes (the plan's own lookAhead keeps it).
    if (!opts.dryRun) for (const image of Object.values(req.images)) this.d.puller.lookAhead?.(image);
    // The pod this argument named last time: its containers are listed beside the pods, and that list is taken
    // when the pods still resolve to it (an answer as fresh as a list made after them).
    const key = req.pod.trim();
    const guess = this.lastPodOf.get(key);
    const early = guess === undefined ? undefined : this.d.runtime.listContainers({ podId: guess, brief: true });
    early?.catch(() => undefined);
    // The pod's IP (a call per pod on CRI) is read by the executor, alongside its other first reads.
    const pods = await this.podsFor(req.pod);
    this.trace.mark(id, 'pods listed');
    const unfinished = [...this.ops.values()].filter((o) => !isTerminal(o.state)).length;
    if (unfinished >= this.maxUnfinished) {
      throw new AgentError('ResourceExhausted', `${unfinished} operations are unfinished on this node, the most it queues; try again when some have ended`);
    }
    const pod = resolvePod(pods, req.pod);
    this.lastPodOf.delete(key);
    this.lastPodOf.set(key, pod.id);
    if (this.lastPodOf.size > LAST_PODS) this.lastPodOf.delete(this.lastPodOf.keys().next().value as string);
    // Behind another operation on the pod, a container may be between instances; it is checked again at its turn.
    const listedStates = new Map<string, ContainerState>();
    const containers = await this.plan(pod, req, this.queue.depth(pod.id) > 0, id, pod.id === guess ? early : undefined, listedStates);
    this.trace.mark(id, 'planned');
    const now = new Date(this.d.clock.now()).toISOString();
    const op: Operation = {
      id,
      podId: pod.id,
      podName: pod.name,
      podIp: pod.ip,
      state: 'Pending',
      request: { ...req, pod: req.pod },
      requested: opts.requested,
      containers,
      createdAt: now,
      updatedAt: now,
    };
    if (opts.dryRun) return { ...op, id: '' };
    if (opts.id && this.ops.has(opts.id)) return this.ops.get(opts.id) as Operation;
    const runsNow = this.queue.depth(pod.id) === 0;
    // The first reads (the old containers, the pod's IP), and whether each new image is present already, go on
    // while the request is confirmed and recorded: they only read (a pull follows the record). An operation that
    // will wait behind another on its pod reads them at its turn.
    if (runsNow) {
      this.executor.reads.prefetch(op, listedStates);
      for (const t of containers) if (t.newImage !== t.oldImage) this.d.puller.lookAhead?.(t.newImage);
    }
    // A request its caller confirms (admit: a ContainerRestart's claim and its requester's review) whose strategies
    // touch nothing before their first journaled step gets no Pending record: its first record is that step's (or
    // its image download's, see pullImages), and no write sits between the confirmation and the first step. A
    // crash before then leaves nothing recorded and nothing touched; the caller submits it again (a ContainerRestart
    // claimed but not journaled is reviewed again) and shows it Pending until then (recorded()).
    const unrecorded = opts.admit !== undefined && containers.every((t) => this.strategyFor(t)?.journalsBeforeTouching);
    const admitted = opts.admit ? await opts.admit().catch((err: unknown) => (this.executor.reads.forget(op.id), Promise.reject(err))) : true;
    if (!admitted) {
      this.executor.reads.forget(op.id);
      throw new AgentError('Aborted', `operation ${op.id} was not admitted; nothing was recorded or touched`);
    }
    if (opts.admit) this.trace.mark(id, 'admitted');
    if (opts.id && this.ops.has(opts.id)) return this.ops.get(opts.id) as Operation;
    if (runsNow) for (const s of this.strategies) if (containers.some((t) => t.strategy === s.name)) s.admitted?.(op, (image) => this.d.puller.present?.(image));
    if (unrecorded) {
      this.unrecorded.add(op.id);
      this.ops.set(op.id, op);
      this.announce(op);
      this.schedule(op);
      return op;
    }
    // The record is whole on disk when the caller hears of it; its directory fsync finishes behind the reply,
    // before the operation's first step can be journaled (so before anything is touched). An operation that runs
    // now begins beside the write: what it does before its first journaled step only reads or creates an inert
    // replacement (nothing is stopped before a step is on record), and its every write waits for this one.
    if (!runsNow) {
      try {
        await this.persist(op, 'after');
      } catch (err) {
        this.executor.reads.forget(op.id);
        throw err;
      }
      this.trace.mark(id, 'journaled Pending');
      this.schedule(op);
      return op;
    }
    const written = this.persist(op, 'after');
    this.firstWrites.set(op.id, written);
    const ran = this.schedule(op);
    try {
      await written;
    } catch (err) {
      // The operation is abandoned: one not executing yet never will, and one executing stops at its first write
      // and removes what it created (RestartExecutor.abandon), before the caller hears the journal's error. A pull
      // it waits on is cut short (unless another caller waits on it too), so that the answer does not wait for it.
      if (this.executing.has(op.id)) {
        this.cancelController(op.id).abort(new AgentError('Aborted', `operation ${op.id} could not be recorded`));
        await ran;
      } else this.abandoned.add(op.id);
      this.executor.reads.forget(op.id);
      throw err;
    } finally {
      this.firstWrites.delete(op.id);
    }
    this.trace.mark(id, 'journaled Pending');
    return op;
  }

  /** The strategy that handles a planned container. */
  private strategyFor(t: { strategy?: string }): RestartStrategy | undefined {
    return this.strategies.find((s) => s.name === (t.strategy ?? 'standalone'));
  }

  /** One operation; NotFound when unknown. */
  get(id: string): Operation {
    const exact = this.ops.get(id);
    if (exact) return exact;
    if (id.length < MIN_ID_PREFIX) {
      const matches = [...this.ops.values()].filter((o) => o.id.startsWith(id)).length;
      throw new AgentError(
        'InvalidArgument',
        `operation id ${quote(id)} is too short: give the whole id or a prefix of at least ${MIN_ID_PREFIX} characters (it matches ${matches} operation${matches === 1 ? '' : 's'})`,
        { reason: RefusalReasons.OperationIdTooShort },
      );
    }
    const byPrefix = [...this.ops.values()].filter((o) => o.id.startsWith(id));
    if (byPrefix.length > 1) {
      throw new AgentError('InvalidArgument', `operation id prefix ${quote(id)} is ambiguous: it matches ${byPrefix.length} operations`, { reason: RefusalReasons.OperationAmbiguous });
    }
    if (byPrefix.length === 0) throw new AgentError('NotFound', `operation ${quote(id)} not found`, { reason: RefusalReasons.OperationNotFound });
    return byPrefix[0];
  }

  /**
   * Whether an operation the engine knows has a record in the journal: false only between the admission of an
   * operation that gets no Pending record (see record) and its first journal write.
   */
  recorded(id: string): boolean {
    return this.ops.has(id) && !this.unrecorded.has(id);
  }

  /** Whether an operation with this exact id is known (recorded, or admitted and about to be). */
  has(id: string): boolean {
    return this.ops.has(id);
  }

  /**
   * All known operations, newest first, optionally of one pod: by name, or by sandbox id or id prefix of at
   * least MIN_ID_PREFIX characters (as `pods` prints them), before or after the operation.
   */
  list(podFilter?: string): Operation[] {
    const f = podFilter?.trim() ?? '';
    const byId = (id: string | undefined) => !!id && (id === f || (f.length >= MIN_ID_PREFIX && /^[0-9a-f]+$/.test(f) && id.startsWith(f)));
    return [...this.ops.values()]
      .filter((o) => !f || o.podName === f || byId(o.podId) || byId(o.podAfter?.podId))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  /** Asks an operation to stop at its next safe point; the old config keeps (or gets back) running. */
  async cancel(id: string): Promise<Operation> {
    const op = this.get(id);
    if (isTerminal(op.state)) throw new AgentError('FailedPrecondition', `operation ${op.id} has already ended (${op.state})`, { reason: RefusalReasons.OperationEnded });
    op.cancelRequested = true;
    if (op.state === 'Pending' && !this.executing.has(op.id)) {
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
    await this.persist(op);
    // A pull the operation waits on stops now, unless another caller waits on it too.
    this.cancelController(op.id).abort(new AgentError('Cancelled', `operation ${op.id} was cancelled`));
    return accepted;
  }

  /**
   * Stops taking operations; running ones continue to a safe point. Resolves when none runs, or after
   * timeoutMs with the ids of those still running (their journal records resume them at the next start).
   */
  async drain(timeoutMs?: number): Promise<string[]> {
    this.isDraining = true;
    this.drainAbort.abort(new AgentError('Unavailable', 'agent is shutting down'));
    const stopTimer = new AbortController();
    let timedOut = false;
    const timer = timeoutMs === undefined ? new Promise<void>(() => undefined) : this.d.clock.sleep(timeoutMs, stopTimer.signal).then(() => void (timedOut = true), () => undefined);
    while (this.running.size > 0 && !timedOut) await Promise.race([Promise.allSettled([...this.running]), timer]);
    stopTimer.abort();
    const left = [...this.executing];
    this.emit('drained');
    return left;
  }

  /** Whether the engine is draining. */
  get draining(): boolean {
    return this.isDraining;
  }

  /** Runs op in its turn; resolves when it has run (or paused), never rejecting. */
  private schedule(op: Operation, resumed = false): Promise<void> {
    // An operation that waits behind another on its pod is planned again when its turn comes.
    const replan = resumed || this.queue.depth(op.podId) > 0;
    const p = this.queue
      .run(op.podId, async () => {
        if (isTerminal(op.state)) return this.executor.cleanup(op);
        if (this.isDraining) throw new Paused();
        // Pending until one of the node's operation slots is free (a cancel then ends it at once).
        const release = await this.slots.acquire(this.drainAbort.signal).catch(() => {
          throw new Paused();
        });
        if (this.abandoned.delete(op.id)) return release();
        this.executing.add(op.id);
        try {
          if (isTerminal(op.state)) return; // cancelled while it waited
          if (this.isDraining) throw new Paused();
          await this.executor.run(op, { replan, resumed });
        } finally {
          this.executing.delete(op.id);
          release();
        }
      })
      .catch((err: unknown) => {
        if (err instanceof Paused) this.d.log.info('operation paused for shutdown; it resumes at next start', { op: op.id });
        else this.d.log.error('operation crashed', { op: op.id, error: String(err) });
      })
      .finally(() => {
        this.running.delete(p);
        this.cancels.delete(op.id);
        this.executor.reads.forget(op.id);
        this.prune().catch((err: unknown) => this.d.log.warn('pruning old operations failed', { error: String(err) }));
      });
    this.running.add(p);
    return p;
  }

  private cancelController(id: string): AbortController {
    let c = this.cancels.get(id);
    if (!c) this.cancels.set(id, (c = new AbortController()));
    return c;
  }

  private async persist(op: Operation, sync: boolean | 'after' = true): Promise<void> {
    await this.d.journal.write(op, sync);
    this.unrecorded.delete(op.id);
    this.ops.set(op.id, op);
    this.announce(op);
  }

  /**
   * Emits 'change' with a copy of op. The progress of a running operation is told once the current turn of the
   * event loop is over, coalesced (the copy is the record as it is then; its step history keeps every step): the
   * runtime call that follows a step is issued first, and copying and sending the record to watchers is not
   * on the way between a stop and a start. An end (a terminal state) is told at once.
   */
  private announce(op: Operation): void {
    // Begun beside its first record: told once that record is written (persist), never when it is abandoned.
    if (this.firstWrites.has(op.id) && !this.ops.has(op.id)) return;
    const queued = this.announcing.get(op.id);
    if (isTerminal(op.state)) {
      if (queued) clearImmediate(queued);
      this.announcing.delete(op.id);
      this.emit('change', structuredClone(op));
      return;
    }
    if (queued) return;
    this.announcing.set(
      op.id,
      setImmediate(() => {
        this.announcing.delete(op.id);
        // Ended meanwhile: its end is told by itself, once journaled (or, for a success, as it is reported).
        if (!isTerminal(op.state)) this.emit('change', structuredClone(op));
      }),
    );
  }

  /** persist() for a running operation: a journal that cannot be written is fatal (see onFatal). */
  private async persistOrDie(op: Operation, sync: boolean): Promise<void> {
    try {
      await this.persist(op, sync);
    } catch (err) {
      this.d.log.error('cannot write the operation journal while an operation runs', { op: op.id, error: String(err) });
      if (!this.d.onFatal) throw err;
      this.d.onFatal(err);
    }
  }

  /**
   * The pods a request for arg may mean. With kubeletPods and arg NAMESPACE/NAME: the sandboxes the kubelet made
   * for that pod, asked of the runtime alone (a list of every sandbox of a shared node took 16-22 ms at load 14),
   * when it has any by that name; planning then lists the chosen sandbox's containers by its id. Not by the
   * kubelet's labels: a container someone else made in that sandbox carries none, and a same-name one must be
   * seen, to refuse the request as ambiguous. Every pod otherwise (a pod the kubelet did not make, an id, a
   * refusal to word).
   */
  private async podsFor(arg: string): Promise<Pod[]> {
    const wanted = arg.trim();
    if (this.d.kubeletPods && /^[^/\s]+\/[^/\s]+$/.test(wanted)) {
      const own = await this.d.runtime.listPods({ withIp: false, kubeletPod: wanted });
      if (own.some((p) => p.name === wanted)) return own;
    }
    return this.d.runtime.listPods({ withIp: false });
  }

  /** Plans a queued operation again from the pod's current containers (see ExecutorDeps.replan). */
  private async replan(op: Operation): Promise<void> {
    // The pod by id, or by name when its id changed: on Docker, replacing a pod of one's only container
    // gives the pod a new id.
    const pod = await this.d.runtime.getPod(op.podId).catch(async (err: unknown) => {
      if (!AgentError.is(err, 'NotFound')) throw err;
      return resolvePod(await this.podsFor(op.podName), op.podName);
    });
    const containers = await this.plan(pod, op.request, false, op.id);
    op.podId = pod.id;
    // The history of each container (its Waiting since the submit) is kept.
    op.containers = containers.map((t, i) => ({ ...t, steps: op.containers[i]?.steps ?? t.steps }));
  }

  /**
   * The one planning path, of a new request and of a queued one planned again: the pod's containers checked
   * against the request (restart-plan.ts), each claimed by the first strategy that takes it, and each checked
   * by its strategy. Refusals throw, touching nothing.
   */
  private async plan(pod: Pod, req: RestartRequest, busy: boolean, id = '', listed?: Promise<Container[]>, states?: Map<string, ContainerState>): Promise<ContainerTarget[]> {
    // Only this pod's containers, and only what the list says (names, attempts, states, labels, the image as
    // created): on CRI each container's status would cost a call. The old containers are read in full next.
    // Listed by the pod's id, never the node's every container (a refusal names them all); listed already when
    // the request named the pod it named last time (record).
    const containers = await (listed ?? this.d.runtime.listContainers({ podId: pod.id, brief: true }));
    this.trace.mark(id, 'containers listed');
    const planned = planRestart(pod, containers, req, { allowKubelet: (this.d.strategies?.length ?? 0) > 0, busy });
    const now = new Date(this.d.clock.now()).toISOString();
    const out: ContainerTarget[] = [];
    for (const p of planned) {
      let chosen: RestartStrategy | undefined;
      for (const s of this.strategies) {
        if (await s.claim(pod, p, req)) {
          chosen = s;
          break;
        }
      }
      if (!chosen) throw new AgentError('Internal', `no strategy claimed container "${p.name}"`);
      this.trace.mark(id, `claimed ${p.name} (${chosen.name})`);
      out.push({
        name: p.name,
        strategy: chosen.name,
        oldId: p.current.id,
        oldRuntimeName: p.current.runtimeName ?? '',
        oldImage: p.current.image,
        newImage: p.newImage,
        newAttempt: p.newAttempt,
        newId: '',
        rollbackId: '',
        step: 'Waiting',
        steps: [{ step: 'Waiting', at: now }],
      });
      chosen.check?.(p, req);
      states?.set(p.current.id, p.current.state);
    }
    return out;
  }

  private async prune(): Promise<void> {
    // A record that still owes cleanup is kept: it is what gets the cleanup done after a crash.
    const done = [...this.ops.values()].filter((o) => isTerminal(o.state) && !this.executor.pendingCleanup(o)).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const excess = done.length - this.retention;
    for (let i = 0; i < excess; i++) {
      this.ops.delete(done[i].id);
      this.unrecorded.delete(done[i].id);
      await this.d.journal.remove(done[i].id);
    }
  }
}
