// Where an operation's time goes: a mark for each thing done on the way from the request to the runtime's
// start (watch event, claim, plan, journal writes, runtime calls, API writes), kept per operation and logged
// once, at debug level, when the operation has done everything it owes (its cleanup included). bench:restart
// and bench:k8s read these records to say which step took what.
import type { Logger } from '../log.js';

/** The log message of a trace record (its fields: op, pod, state, marks). */
export const TRACE_MESSAGE = 'operation trace';

/** Marks kept for one operation at most (a long verification adds none, but a runaway loop must not grow it). */
const MAX_MARKS = 200;

/** One mark: what happened, ms after the operation's first mark. */
export interface TraceMark {
  what: string;
  ms: number;
}

/** Per-operation marks on a monotonic clock; costs nothing unless the log's level is debug. */
export class StepTrace {
  private readonly marks = new Map<string, { t0: number; list: TraceMark[] }>();
  private readonly on: boolean;

  constructor(
    private readonly log: Logger,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.on = log.isDebugEnabled();
  }

  /** Records that `what` happened now in operation id (the first mark of an id is its zero). */
  mark(id: string, what: string): void {
    if (!this.on || !id) return;
    const t = this.now();
    let m = this.marks.get(id);
    if (!m) this.marks.set(id, (m = { t0: t, list: [] }));
    if (m.list.length < MAX_MARKS) m.list.push({ what, ms: Math.round((t - m.t0) * 10) / 10 });
  }

  /** Logs the marks of operation id (debug) and forgets them. */
  end(id: string, fields: Record<string, unknown> = {}): void {
    const m = this.marks.get(id);
    if (!m) return;
    this.marks.delete(id);
    this.log.debug(TRACE_MESSAGE, { op: id, ...fields, marks: m.list });
  }

  /** Forgets the marks of an operation that was never recorded (a refusal, a lost claim). */
  drop(id: string): void {
    this.marks.delete(id);
  }
}
