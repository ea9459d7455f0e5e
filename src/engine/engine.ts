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
import { isTerminal, type Operation, type RestartRequest } from './operation.js';
import { resolvePod } from './pod-resolver.js';
import { planRestart, preStopCommand } from './restart-plan.js';
import { Paused, RestartExecutor, type ExecutorDeps } from './restart-executor.js';
import type { RestartStrategy, StrategyName } from './restart-strategy.js';
import type { PlannedTarget } from './restart-plan.js';

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
  /**
   * Strategies tried, in order, for each planned container before the standalone one (Kubernetes mode: the
   * kubelet strategy, which claims every kubelet-managed container).
   */
  strategies?: RestartStrategy[];
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
      strategies: d.strategies,
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
   * dryRun, returns the planned operation (no id) without recording or running it. With id, the operation
   * gets that id, and a request whose id is already recorded returns that record instead of running twice.
   */
  async restart(req: RestartRequest, opts: { dryRun?: boolean; id?: string } = {}): Promise<Operation> {
    const known = opts.id ? this.ops.get(opts.id) : undefined;
    if (known && !opts.dryRun) return known;
    if (this.isDraining) throw new AgentError('Unavailable', 'agent is shutting down and takes no new operations');
    const [pods, all] = await Promise.all([this.d.runtime.listPods({ withIp: false }), this.d.runtime.listContainers()]);
    // The pod's IP (a call per pod on CRI) is read by the executor, alongside its other first reads.
    const pod = resolvePod(pods, req.pod);
    const containers = all.filter((c) => c.podId === pod.id);
    // Behind another operation on the pod, a container may be between instances; it is checked again at its turn.
    const busy = this.queue.depth(pod.id) > 0;
    const planned = planRestart(pod, containers, req, { kind: this.d.runtime.kind, allowKubelet: this.allowKubelet, busy });
    const strategies = await this.strategiesFor(pod, planned, req);
    if (!req.skipPreStop) planned.forEach((p, i) => strategies[i] === 'standalone' && preStopCommand(p.current.labels, p.current.annotations));
    const now = new Date(this.d.clock.now()).toISOString();
    const op: Operation = {
      id: opts.id ?? randomUUID(),
      podId: pod.id,
      podName: pod.name,
      podIp: pod.ip,
      state: 'Pending',
      request: { ...req, pod: req.pod },
      containers: planned.map((p, i) => ({
        name: p.name,
        strategy: strategies[i],
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
    const byPrefix = id.length >= 6 ? [...this.ops.values()].filter((o) => o.id.startsWith(id)) : [];
    if (byPrefix.length > 1) throw new AgentError('InvalidArgument', `operation id prefix "${id}" is ambiguous: it matches ${byPrefix.length} operations`);
    if (byPrefix.length === 0) throw new AgentError('NotFound', `operation "${id}" not found`);
    return byPrefix[0];
  }

  /** Whether an operation with this exact id is recorded. */
  has(id: string): boolean {
    return this.ops.has(id);
  }

  /** All known operations, newest first, optionally of one pod. */
  list(podFilter?: string): Operation[] {
    return [...this.ops.values()]
      .filter((o) => !podFilter || o.podId === podFilter || o.podName === podFilter)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  /** Asks an operation to stop at its next safe point; the old config keeps (or gets back) running. */
  async cancel(id: string): Promise<Operation> {
    const op = this.get(id);
    if (isTerminal(op.state)) throw new AgentError('FailedPrecondition', `operation ${op.id} has already ended (${op.state})`);
    op.cancelRequested = true;
    await this.persist(op);
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
        this.prune().catch((err: unknown) => this.d.log.warn('pruning old operations failed', { error: String(err) }));
      });
    this.running.add(p);
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
    const planned = planRestart(pod, containers, op.request, { kind: this.d.runtime.kind, allowKubelet: this.allowKubelet });
    const strategies = await this.strategiesFor(pod, planned, op.request);
    if (!op.request.skipPreStop) planned.forEach((p, i) => strategies[i] === 'standalone' && preStopCommand(p.current.labels, p.current.annotations));
    op.containers.forEach((t, i) => {
      const p = planned[i];
      t.strategy = strategies[i];
      t.oldId = p.current.id;
      t.oldRuntimeName = this.d.runtime.kind === 'docker' ? (p.current.runtimeName ?? '') : '';
      t.oldImage = p.current.image;
      t.newImage = p.newImage;
      t.newAttempt = p.newAttempt;
    });
  }

  /** With a strategy that claims kubelet-managed containers, the plan may name them. */
  private get allowKubelet(): boolean {
    return Boolean(this.d.allowKubelet) || (this.d.strategies?.length ?? 0) > 0;
  }

  /** The strategy of each planned container: the first that claims it, else standalone. Refusals throw. */
  private async strategiesFor(pod: Pod, planned: PlannedTarget[], req: RestartRequest): Promise<StrategyName[]> {
    const out: StrategyName[] = [];
    for (const p of planned) {
      let chosen: StrategyName = 'standalone';
      for (const s of this.d.strategies ?? []) {
        if (await s.claim(pod, p, req)) {
          chosen = s.name;
          break;
        }
      }
      out.push(chosen);
    }
    return out;
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
