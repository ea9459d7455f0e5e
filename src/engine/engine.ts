// The restart engine: validates requests, keeps operation records, serializes operations per pod, runs them
// with the executor, resumes unfinished ones from the journal at start-up, and drains on shutdown.
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Container, Pod } from '../runtime/types.js';
import type { ImagePuller } from './image-puller.js';
import { Journal } from './journal.js';
import { KeyedQueue } from './keyed-queue.js';
import { isTerminal, type Operation, type RequestedSettings, type RestartRequest } from './operation.js';
import { MIN_ID_PREFIX, resolvePod } from './pod-resolver.js';
import { RefusalReasons } from './reasons.js';
import { planRestart, preStopCommand } from './restart-plan.js';
import { Paused, RestartExecutor, type ExecutorDeps } from './restart-executor.js';

/** Construction parameters of the engine. */
export interface EngineDeps {
  runtime: Runtime;
  puller: ImagePuller;
  journal: Journal;
  clock: Clock;
  log: Logger;
  /** Finished operations kept for `ops`/`get` (oldest dropped first). */
  retention?: number;
  /** Accept kubelet-managed containers (Kubernetes mode). */
  allowKubelet?: boolean;
  /** Called after each container step is journaled. */
  afterStep?: ExecutorDeps['afterStep'];
  /**
   * Called when the journal cannot be written while an operation runs. The daemon exits so that a restart
   * recovers from the last good record; without a handler the error propagates.
   */
  onFatal?: (err: unknown) => void;
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
  private readonly executor: RestartExecutor;
  private isDraining = false;
  private readonly retention: number;

  constructor(private readonly d: EngineDeps) {
    super();
    this.setMaxListeners(0);
    this.retention = d.retention ?? 500;
    this.executor = new RestartExecutor({
      runtime: d.runtime,
      puller: d.puller,
      clock: d.clock,
      log: d.log,
      save: (op, sync) => this.persistOrDie(op, sync),
      publish: (op) => this.emit('change', structuredClone(op)),
      draining: () => this.isDraining,
      drainSignal: this.drainAbort.signal,
      replan: (op) => this.replan(op),
      afterStep: d.afterStep,
      cancelSignal: (op) => this.cancelController(op.id).signal,
    });
  }

  /** Loads the journal and resumes every unfinished operation, in the order they were submitted. */
  async start(): Promise<void> {
    await this.d.journal.open();
    const all = await this.d.journal.readAll((file, err) => this.d.log.error('unreadable journal record skipped', { file, error: String(err) }));
    for (const op of all) this.ops.set(op.id, op);
    const unfinished = all.filter((op) => !isTerminal(op.state));
    for (const op of unfinished) {
      this.d.log.info('resuming operation from journal', { op: op.id, pod: op.podName, state: op.state });
      this.schedule(op, true);
    }
    await this.prune();
  }

  /** Pods and their containers on this node. */
  async listPods(): Promise<PodView[]> {
    const [pods, containers] = await Promise.all([this.d.runtime.listPods(), this.d.runtime.listContainers()]);
    return pods.map((pod) => ({ pod, containers: containers.filter((c) => c.podId === pod.id) }));
  }

  /**
   * Validates a request against the node, records it Pending and queues it. Refusals touch nothing. With
   * dryRun, returns the planned operation (no id) without recording or running it.
   */
  async restart(req: RestartRequest, opts: { dryRun?: boolean; requested?: RequestedSettings } = {}): Promise<Operation> {
    if (this.isDraining) throw new AgentError('Unavailable', 'agent is shutting down and takes no new operations', { reason: RefusalReasons.ShuttingDown });
    // The pod's IP (a call per pod on CRI) is read by the executor, alongside its other first reads.
    const pod = resolvePod(await this.d.runtime.listPods({ withIp: false }), req.pod);
    // Only this pod's containers: on CRI each listed container costs a status call.
    const containers = await this.d.runtime.listContainers({ podId: pod.id });
    const planned = planRestart(pod, containers, req, { kind: this.d.runtime.kind, allowKubelet: this.d.allowKubelet });
    if (!req.skipPreStop) planned.forEach((p) => preStopCommand(p.current.labels, p.current.annotations));
    const now = new Date(this.d.clock.now()).toISOString();
    const op: Operation = {
      id: randomUUID(),
      podId: pod.id,
      podName: pod.name,
      podIp: pod.ip,
      state: 'Pending',
      request: { ...req, pod: req.pod },
      requested: opts.requested,
      containers: planned.map((p) => ({
        name: p.name,
        oldId: p.current.id,
        oldRuntimeName: this.d.runtime.kind === 'docker' ? (p.current.runtimeName ?? '') : '',
        oldImage: p.current.image,
        newImage: p.newImage,
        newAttempt: p.newAttempt,
        newId: '',
        rollbackId: '',
        step: 'Waiting',
        steps: [{ step: 'Waiting', at: now }],
      })),
      createdAt: now,
      updatedAt: now,
    };
    if (opts.dryRun) return { ...op, id: '' };
    await this.persist(op);
    this.schedule(op);
    return op;
  }

  /** One operation; NotFound when unknown. */
  get(id: string): Operation {
    const exact = this.ops.get(id);
    if (exact) return exact;
    if (id.length < MIN_ID_PREFIX) {
      const matches = [...this.ops.values()].filter((o) => o.id.startsWith(id)).length;
      throw new AgentError(
        'InvalidArgument',
        `operation id "${id}" is too short: give the whole id or a prefix of at least ${MIN_ID_PREFIX} characters (it matches ${matches} operation${matches === 1 ? '' : 's'})`,
        { reason: RefusalReasons.OperationIdTooShort },
      );
    }
    const byPrefix = [...this.ops.values()].filter((o) => o.id.startsWith(id));
    if (byPrefix.length > 1) {
      throw new AgentError('InvalidArgument', `operation id prefix "${id}" is ambiguous: it matches ${byPrefix.length} operations`, { reason: RefusalReasons.OperationAmbiguous });
    }
    if (byPrefix.length === 0) throw new AgentError('NotFound', `operation "${id}" not found`, { reason: RefusalReasons.OperationNotFound });
    return byPrefix[0];
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
    await this.persist(op);
    // A pull the operation waits on stops now, unless another caller waits on it too.
    this.cancelController(op.id).abort(new AgentError('Cancelled', `operation ${op.id} was cancelled`));
    return op;
  }

  /** Stops taking operations; running ones continue to a safe point; resolves when none runs. */
  async drain(): Promise<void> {
    this.isDraining = true;
    this.drainAbort.abort(new AgentError('Unavailable', 'agent is shutting down'));
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
    this.emit('drained');
  }

  /** Whether the engine is draining. */
  get draining(): boolean {
    return this.isDraining;
  }

  private schedule(op: Operation, resumed = false): void {
    // An operation that waits behind another on its pod is planned again when its turn comes.
    const replan = resumed || this.queue.depth(op.podId) > 0;
    const p = this.queue
      .run(op.podId, async () => {
        if (isTerminal(op.state)) return;
        if (this.isDraining) throw new Paused();
        await this.executor.run(op, { replan });
      })
      .catch((err: unknown) => {
        if (err instanceof Paused) this.d.log.info('operation paused for shutdown; it resumes at next start', { op: op.id });
        else this.d.log.error('operation crashed', { op: op.id, error: String(err) });
      })
      .finally(() => {
        this.running.delete(p);
        this.cancels.delete(op.id);
        this.prune().catch((err: unknown) => this.d.log.warn('pruning old operations failed', { error: String(err) }));
      });
    this.running.add(p);
  }

  private cancelController(id: string): AbortController {
    let c = this.cancels.get(id);
    if (!c) this.cancels.set(id, (c = new AbortController()));
    return c;
  }

  private async persist(op: Operation, sync = true): Promise<void> {
    await this.d.journal.write(op, sync);
    this.ops.set(op.id, op);
    this.emit('change', structuredClone(op));
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

  /** Plans a queued operation again from the pod's current containers (see ExecutorDeps.replan). */
  private async replan(op: Operation): Promise<void> {
    // The pod by id, or by name when its id changed: on Docker, replacing a pod of one's only container
    // gives the pod a new id.
    const pod = await this.d.runtime.getPod(op.podId).catch(async (err: unknown) => {
      if (!AgentError.is(err, 'NotFound')) throw err;
      return resolvePod(await this.d.runtime.listPods({ withIp: false }), op.podName);
    });
    op.podId = pod.id;
    const containers = await this.d.runtime.listContainers({ podId: pod.id });
    const planned = planRestart(pod, containers, op.request, { kind: this.d.runtime.kind, allowKubelet: this.d.allowKubelet });
    if (!op.request.skipPreStop) planned.forEach((p) => preStopCommand(p.current.labels, p.current.annotations));
    op.containers.forEach((t, i) => {
      const p = planned[i];
      t.oldId = p.current.id;
      t.oldRuntimeName = this.d.runtime.kind === 'docker' ? (p.current.runtimeName ?? '') : '';
      t.oldImage = p.current.image;
      t.newImage = p.newImage;
      t.newAttempt = p.newAttempt;
    });
  }

  private async prune(): Promise<void> {
    const done = [...this.ops.values()].filter((o) => isTerminal(o.state)).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const excess = done.length - this.retention;
    for (let i = 0; i < excess; i++) {
      this.ops.delete(done[i].id);
      await this.d.journal.remove(done[i].id);
    }
  }
}
