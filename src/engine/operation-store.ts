// The engine's operations: the records it knows (journaled, or admitted and about to be), their journal writes,
// the 'change' each write or progress tells watchers, and each running operation's cancel signal. It is the
// OperationStore the executor asks (executor-deps.ts), in place of callbacks into the engine.
import { AgentError } from '../errors.js';
import { quote } from '../quote.js';
import type { Logger } from '../log.js';
import { MIN_ID_PREFIX } from '../id-prefix.js';
import type { OperationStore } from './executor-deps.js';
import type { Journal } from './journal.js';
import { isTerminal, type Operation } from './operation.js';
import { RefusalReasons } from './reasons.js';

/** What the store needs. */
export interface StoreDeps {
  journal: Journal;
  log: Logger;
  /** Finished operations kept (oldest dropped first). */
  retention: number;
  /** Tells watchers of a changed record (the engine's 'change' event). */
  changed(op: Operation): void;
  /** Called when the journal cannot be written while an operation runs (see EngineDeps.onFatal). */
  onFatal?: (err: unknown) => void;
}

/** The operations an engine knows, and their journal writes. */
export class JournaledOperations implements OperationStore {
  private readonly ops = new Map<string, Operation>();
  /** Per running operation: aborted by cancel() so that a pull it waits on stops (see cancelled). */
  private readonly cancels = new Map<string, AbortController>();
  /** Per operation: a change not told yet (see publish). */
  private readonly announcing = new Map<string, NodeJS.Immediate>();
  /** Operations known and admitted but not yet written to the journal (see admitUnrecorded). */
  private readonly unrecorded = new Set<string>();
  /** The first record's write of each operation that began beside it (see beginFirstWrite). */
  private readonly firstWrites = new Map<string, Promise<void>>();

  constructor(private readonly d: StoreDeps) {}

  /** Takes in the records read back from the journal at start. */
  load(all: Operation[]): void {
    for (const op of all) this.ops.set(op.id, op);
  }

  /** The operation with exactly this id, if known. */
  exact(id: string): Operation | undefined {
    return this.ops.get(id);
  }

  /** One operation by id or unique prefix of at least MIN_ID_PREFIX characters; NotFound when unknown. */
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

  /** Whether a known operation has a record in the journal (see Engine.recorded). */
  recorded(id: string): boolean {
    return this.ops.has(id) && !this.unrecorded.has(id);
  }

  /** Every known operation, in no particular order. */
  all(): Operation[] {
    return [...this.ops.values()];
  }

  /** How many known operations have not ended. */
  unfinished(): number {
    return this.all().filter((o) => !isTerminal(o.state)).length;
  }

  /** Knows an admitted operation that gets no Pending record: its first journal write is its first step's. */
  admitUnrecorded(op: Operation): void {
    this.unrecorded.add(op.id);
    this.ops.set(op.id, op);
    this.publish(op);
  }

  /** Journals op (sync: see Journal.write), knows it, and tells watchers. */
  async persist(op: Operation, sync: boolean | 'after' = true): Promise<void> {
    await this.d.journal.write(op, sync);
    this.unrecorded.delete(op.id);
    this.ops.set(op.id, op);
    this.publish(op);
  }

  /** Begins op's first record's write, which op's own writes wait for (see firstRecord); endFirstWrite once settled. */
  beginFirstWrite(op: Operation): Promise<void> {
    const written = this.persist(op, 'after');
    this.firstWrites.set(op.id, written);
    return written;
  }

  /** Forgets the first record's write of op, settled. */
  endFirstWrite(id: string): void {
    this.firstWrites.delete(id);
  }

  /** persist() for a running operation: a journal that cannot be written is fatal (see StoreDeps.onFatal). */
  async record(op: Operation, sync: boolean): Promise<void> {
    try {
      await this.persist(op, sync);
    } catch (err) {
      this.d.log.error('cannot write the operation journal while an operation runs', { op: op.id, error: String(err) });
      if (!this.d.onFatal) throw err;
      this.d.onFatal(err);
    }
  }

  /** The write of op's first record while it is under way (see OperationStore.firstRecord). */
  firstRecord(op: Operation): Promise<void> | undefined {
    return this.firstWrites.get(op.id);
  }

  /**
   * Tells watchers of a copy of op. The progress of a running operation is told once the current turn of the
   * event loop is over, coalesced (the copy is the record as it is then; its step history keeps every step): the
   * runtime call that follows a step is issued first, and copying and sending the record to watchers is not
   * on the way between a stop and a start. An end (a terminal state) is told at once.
   */
  publish(op: Operation): void {
    // Begun beside its first record: told once that record is written (persist), never when it is abandoned.
    if (this.firstWrites.has(op.id) && !this.ops.has(op.id)) return;
    const queued = this.announcing.get(op.id);
    if (isTerminal(op.state)) {
      if (queued) clearImmediate(queued);
      this.announcing.delete(op.id);
      this.d.changed(structuredClone(op));
      return;
    }
    if (queued) return;
    this.announcing.set(
      op.id,
      setImmediate(() => {
        this.announcing.delete(op.id);
        // Ended meanwhile: its end is told by itself, once journaled (or, for a success, as it is reported).
        if (!isTerminal(op.state)) this.d.changed(structuredClone(op));
      }),
    );
  }

  /** Aborts when op is cancelled (or abandoned), with that reason (see cancel). */
  cancelled(op: Operation): AbortSignal {
    return this.controller(op.id).signal;
  }

  /** Aborts op's cancel signal with reason: a pull it waits on stops, unless another caller waits on it too. */
  cancel(id: string, reason: AgentError): void {
    this.controller(id).abort(reason);
  }

  /** Forgets the cancel signal of an operation that has run. */
  settled(id: string): void {
    this.cancels.delete(id);
  }

  /** Drops the oldest ended operations beyond the retention, but those keep(op) holds on to. */
  async prune(keep: (op: Operation) => boolean): Promise<void> {
    const done = this.all().filter((o) => isTerminal(o.state) && !keep(o)).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const excess = done.length - this.d.retention;
    for (let i = 0; i < excess; i++) {
      this.ops.delete(done[i].id);
      this.unrecorded.delete(done[i].id);
      await this.d.journal.remove(done[i].id);
    }
  }

  private controller(id: string): AbortController {
    let c = this.cancels.get(id);
    if (!c) this.cancels.set(id, (c = new AbortController()));
    return c;
  }
}
