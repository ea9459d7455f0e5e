// A restart request's way in, one named piece per job: the planner resolves its pod and plans it (refusals touch
// nothing), the caller admits it, the store journals it, and the scheduler runs it in its turn. A dry run stops
// after the plan.
import { randomUUID } from 'node:crypto';
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { ContainerState } from '../runtime/types.js';
import type { FirstReader } from './first-reads.js';
import type { ImagePuller } from './image-puller.js';
import type { OperationScheduler } from './operation-scheduler.js';
import type { JournaledOperations } from './operation-store.js';
import type { Operation, RequestedSettings, RestartRequest } from './operation.js';
import { RefusalReasons } from './reasons.js';
import type { RestartPlanner } from './restart-planner.js';
import { strategyNamed, type RestartStrategy } from './restart-strategy.js';
import type { StepTrace } from './step-trace.js';

/** The options of one restart request (see Engine.restart). */
export interface RestartOptions {
  dryRun?: boolean;
  id?: string;
  requested?: RequestedSettings;
  admit?: () => Promise<boolean>;
}

/** The engine's pieces a request passes through. */
export interface IntakeDeps {
  puller: ImagePuller;
  clock: Clock;
  store: JournaledOperations;
  planner: RestartPlanner;
  reads: FirstReader;
  scheduler: OperationScheduler;
  /** Every strategy, in the order they claim a container. */
  strategies: RestartStrategy[];
  trace: StepTrace;
  /** Unfinished operations (running and waiting) at most; a restart beyond is refused. */
  maxUnfinished: number;
  /** True once the agent is draining: it takes no new operations. */
  draining(): boolean;
}

/** Takes restart requests in. */
export class RestartIntake {
  constructor(private readonly d: IntakeDeps) {}

  /** A request, taken in (see Engine.restart). */
  async take(req: RestartRequest, opts: RestartOptions = {}): Promise<Operation> {
    const known = opts.id ? this.d.store.exact(opts.id) : undefined;
    if (known && !opts.dryRun) return known;
    const id = opts.id ?? randomUUID();
    if (!opts.dryRun) this.d.trace.mark(id, 'request');
    try {
      return await this.record(id, req, opts);
    } catch (err) {
      this.d.trace.drop(id);
      throw err;
    }
  }

  /** A request's way in: resolved and planned, admitted, journaled, scheduled, each by its own piece. */
  private async record(id: string, req: RestartRequest, opts: RestartOptions): Promise<Operation> {
    if (this.d.draining()) throw new AgentError('Unavailable', 'agent is shutting down and takes no new operations', { reason: RefusalReasons.ShuttingDown });
    // Whether the images the request names are present is looked up at once (a read), beside the planning: the
    // look is the one the operation's pull check takes (the plan's own lookAhead keeps it).
    if (!opts.dryRun) for (const image of Object.values(req.images)) this.d.puller.lookAhead?.(image);
    const { op, states } = await this.planned(id, req, opts.requested);
    if (opts.dryRun) return { ...op, id: '' };
    if (opts.id && this.d.store.exact(opts.id)) return this.d.store.exact(opts.id) as Operation;
    const runsNow = !this.d.scheduler.busy(op.podId);
    // The first reads (the old containers, the pod's IP), and whether each new image is present already, go on
    // while the request is confirmed and recorded: they only read (a pull follows the record). An operation that
    // will wait behind another on its pod reads them at its turn.
    if (runsNow) {
      this.d.reads.prefetch(op, states);
      for (const t of op.containers) if (t.newImage !== t.oldImage) this.d.puller.lookAhead?.(t.newImage);
    }
    // A request its caller confirms (admit: a ContainerRestart's claim and its requester's review) whose strategies
    // touch nothing before their first journaled step gets no Pending record: its first record is that step's (or
    // its image download's, see pullImages), and no write sits between the confirmation and the first step. A
    // crash before then leaves nothing recorded and nothing touched; the caller submits it again (a ContainerRestart
    // claimed but not journaled is reviewed again) and shows it Pending until then (Engine.recorded).
    const unrecorded = opts.admit !== undefined && op.containers.every((t) => strategyNamed(this.d.strategies, t)?.journalsBeforeTouching);
    await this.admit(op, opts.admit);
    if (opts.id && this.d.store.exact(opts.id)) return this.d.store.exact(opts.id) as Operation;
    if (runsNow) for (const s of this.d.strategies) if (op.containers.some((t) => t.strategy === s.name)) s.admitted?.(op, (image) => this.d.puller.present?.(image));
    if (unrecorded) {
      this.d.store.admitUnrecorded(op);
      this.d.scheduler.schedule(op);
      return op;
    }
    return runsNow ? this.beginBesideRecord(op) : this.journalThenQueue(op);
  }

  /** Resolves and plans a request into a Pending operation (refusals throw, touching nothing). */
  private async planned(id: string, req: RestartRequest, requested: RequestedSettings | undefined): Promise<{ op: Operation; states: Map<string, ContainerState> }> {
    const look = await this.d.planner.look(id, req.pod);
    const unfinished = this.d.store.unfinished();
    if (unfinished >= this.d.maxUnfinished) {
      throw new AgentError('ResourceExhausted', `${unfinished} operations are unfinished on this node, the most it queues; try again when some have ended`);
    }
    // Behind another operation on the pod, a container may be between instances; it is checked again at its turn.
    const { pod, containers, states } = await this.d.planner.plan(id, req, look, (podId) => this.d.scheduler.busy(podId));
    const now = new Date(this.d.clock.now()).toISOString();
    const op: Operation = { id, podId: pod.id, podName: pod.name, podIp: pod.ip, state: 'Pending', request: { ...req, pod: req.pod }, requested, containers, createdAt: now, updatedAt: now };
    return { op, states };
  }

  /** Asks the caller's admit(), if any: a refusal (false, or a throw) forgets the reads begun and records nothing. */
  private async admit(op: Operation, admit: RestartOptions['admit']): Promise<void> {
    if (!admit) return;
    const admitted = await admit().catch((err: unknown) => (this.d.reads.forget(op.id), Promise.reject(err)));
    if (!admitted) {
      this.d.reads.forget(op.id);
      throw new AgentError('Aborted', `operation ${op.id} was not admitted; nothing was recorded or touched`);
    }
    this.d.trace.mark(op.id, 'admitted');
  }

  /**
   * An operation that waits behind another on its pod: journaled Pending (the record is whole on disk when the
   * caller hears of it; its directory fsync finishes behind the reply), then queued.
   */
  private async journalThenQueue(op: Operation): Promise<Operation> {
    try {
      await this.d.store.persist(op, 'after');
    } catch (err) {
      this.d.reads.forget(op.id);
      throw err;
    }
    this.d.trace.mark(op.id, 'journaled Pending');
    this.d.scheduler.schedule(op);
    return op;
  }

  /**
   * An operation that runs now begins beside its Pending record's write: what it does before its first journaled
   * step only reads or creates an inert replacement (nothing is stopped before a step is on record), and its
   * every write waits for this one (the directory fsync finishes before that first step, behind the reply).
   */
  private async beginBesideRecord(op: Operation): Promise<Operation> {
    const written = this.d.store.beginFirstWrite(op);
    const ran = this.d.scheduler.schedule(op);
    try {
      await written;
    } catch (err) {
      // The operation is abandoned: one not executing yet never will, and one executing stops at its first write
      // and removes what it created (RestartExecutor.abandon), before the caller hears the journal's error. A pull
      // it waits on is cut short (unless another caller waits on it too), so that the answer does not wait for it.
      if (this.d.scheduler.isExecuting(op.id)) {
        this.d.store.cancel(op.id, new AgentError('Aborted', `operation ${op.id} could not be recorded`));
        await ran;
      } else this.d.scheduler.abandon(op.id);
      this.d.reads.forget(op.id);
      throw err;
    } finally {
      this.d.store.endFirstWrite(op.id);
    }
    this.d.trace.mark(op.id, 'journaled Pending');
    return op;
  }
}
