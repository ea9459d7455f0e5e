// The agent's side of ContainerRestart objects: watches them, takes those whose pod runs on this node, runs
// each with the engine (the same engine and journal as an RPC restart), mirrors the operation into the object's
// status and deletes the object after its TTL.
//
// Exactly once: the operation id (the object's uid) is written to the status before the operation is submitted,
// and the engine journals the operation under that id before touching anything. An agent that restarts finds
// the id in the status and either follows the journaled operation or, if the journal never got it, submits it
// then. A request whose status says it ran but whose journal record is gone is failed, never run again.
import { AgentError } from '../../errors.js';
import { isTerminal, type Operation } from '../../engine/operation.js';
import { Backoff } from '../../backoff.js';
import { isConflict } from '../../k8s/api-error.js';
import { Follower, followerDeps } from '../../k8s/list-follower.js';
import { containerRestartPath } from './api.js';
import type { ContainerRestartControllerDeps } from './controller-deps.js';
import { WaitingRequests } from './waiting.js';
import { statusFromOperation } from './status.js';
import { writeStatus } from './status-writer.js';
import { resumeRequest, takeRequest, type TakeHost } from './take.js';
import { StatusPace } from './status-pace.js';
import { CR_GROUP, CR_PLURAL, isFinished, keyOf, newer, type ContainerRestart } from './types.js';

/** The CRD's name (deploy/crds/containerrestart.yaml). */
const CRD_NAME = `${CR_PLURAL}.${CR_GROUP}`;
/** How often a missing CRD (or a watch refused with 403) is looked for again. */
const CRD_RECHECK_MS = 30_000;

/** First delay before the watch is started again after a failure, and the longest, ms. */
const WATCH_BACKOFF_MS = { initialBackoffMs: 250, maxBackoffMs: 5000 };

interface SyncState {
  running: boolean;
  again: boolean;
  failures: number;
}

/** Handles the ContainerRestart objects of this node's pods until stopped. */
export class ContainerRestartController {
  private follower?: Follower<ContainerRestart>;
  private readonly stopping = new AbortController();
  private readonly syncs = new Map<string, SyncState>();
  /** The newest version of each object this controller has read or written (fresher than the watch's cache). */
  private readonly latest = new Map<string, ContainerRestart>();
  private readonly keyByOp = new Map<string, string>();
  private readonly backoff: Backoff;
  /** Requests (by uid) whose end was reported to the metrics. */
  private readonly reported = new Set<string>();
  private crdMissingSaid = false;
  /** Unclaimed requests waiting for their pod to reach this node, looked at again when it does. */
  private readonly waiting = new WaitingRequests();
  /** Requests with a wake-up set for the end of their unclaimed TTL. */
  private readonly wakes = new Set<string>();
  private unsubscribePods?: () => void;
  /** The pace of progress writes (status-pace.ts). */
  private readonly pace: StatusPace;
  private readonly onChange = (op: Operation) => {
    const key = this.keyByOp.get(op.id);
    if (!key) return;
    // The end is written at once, after the step that announced it has gone on to its side effect. Progress
    // (Pulling, Recreating, ...) is written once per STATUS_COALESCE_MS at most: the API server and the CPU it
    // shares with the agent and the kubelet are left to the restart's own calls (the patch, the stop).
    if (isTerminal(op.state)) setImmediate(() => this.enqueue(key));
    else if (!this.pace.held(key)) this.enqueue(key);
  };

  /** Said once: the cluster does not let the agent make the dry run as the requester. */
  private readonly admissionUnavailable = () => {
    if (this.admissionUnavailableSaid) return;
    this.admissionUnavailableSaid = true;
    this.d.log.warn("cannot make the dry run of an image change as its requester: only a ServiceAccount requester is impersonated, and only where the agent may (deploy/rbac.yaml's impersonate rules, constrained impersonation of Kubernetes 1.36); admission sees the agent's own ServiceAccount for this one");
  };
  private admissionUnavailableSaid = false;

  constructor(private readonly d: ContainerRestartControllerDeps) {
    this.backoff = new Backoff(d.clock, { initialMs: 250, maxMs: 5000 });
    this.pace = new StatusPace(d.clock, this.stopping.signal, (key) => this.enqueue(key));
  }

  /** Starts watching (failures are retried in the background, see list-follower.ts). */
  start(): void {
    const list = async () => {
      const l = await this.d.api.list(this.d.namespace);
      return { apiVersion: 'v1', kind: 'List', metadata: l.metadata ?? {}, items: l.items };
    };
    // A restarted watch goes on from the last version seen, so nothing that happened meanwhile is missed
    // (410: a full re-list).
    this.follower = new Follower<ContainerRestart>(
      followerDeps(this.d.kc, this.d.clock),
      { path: containerRestartPath(this.d.namespace), list, ...WATCH_BACKOFF_MS, deniedRetryMs: CRD_RECHECK_MS },
      {
        add: (cr) => this.observe(cr),
        update: (cr) => this.observe(cr),
        delete: (cr) => this.forget(keyOf(cr)),
        failed: (f) => {
          // No such resource: the CRD is not installed (yet). Looked for again now and then, said once.
          const missing = f.status === 404;
          const error = f.error instanceof Error ? f.error.message : String(f.error);
          if (!missing) this.d.log.warn('ContainerRestart watch failed; restarting it', { error, status: f.status, attempt: f.failures, retryInMs: f.retryInMs });
          else if (!this.crdMissingSaid) this.d.log.info(`the ContainerRestart CRD is not installed (${CRD_NAME}); looking again every ${CRD_RECHECK_MS / 1000} s`);
          this.crdMissingSaid ||= missing;
        },
      },
    );
    this.d.engine.on('change', this.onChange);
    // A request made before its pod reached this node is taken when the pod arrives, checked as of then.
    this.unsubscribePods = this.d.onPod?.((ns, name) => {
      for (const key of this.waiting.take(ns, name)) this.enqueue(key);
    });
    this.follower.start();
    this.d.log.info('watching ContainerRestarts', { namespace: this.d.namespace ?? '(all)', node: this.d.nodeName });
  }

  /** Stops watching and writing; operations keep running in the engine and are mirrored at the next start. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.d.engine.off('change', this.onChange);
    this.unsubscribePods?.();
    await this.follower?.stop();
  }

  private observe(cr: ContainerRestart): void {
    const key = keyOf(cr);
    const prev = this.latest.get(key);
    if (!prev || prev.metadata.uid !== cr.metadata.uid || !newer(prev, cr)) this.latest.set(key, cr);
    this.enqueue(key);
  }

  private forget(key: string): void {
    const uid = this.latest.get(key)?.metadata.uid;
    if (uid) this.reported.delete(uid);
    this.latest.delete(key);
    this.pace.forget(key);
    this.waiting.remove(key);
    if (!this.syncs.get(key)?.running) this.syncs.delete(key);
    for (const [op, k] of this.keyByOp) if (k === key) this.keyByOp.delete(op);
  }

  /** Runs sync(key) now, or once more after the running one: never two at once for one object. */
  private enqueue(key: string): void {
    if (this.stopping.signal.aborted) return;
    let s = this.syncs.get(key);
    if (!s) this.syncs.set(key, (s = { running: false, again: false, failures: 0 }));
    if (s.running) {
      s.again = true;
      return;
    }
    s.running = true;
    void this.drive(key, s);
  }

  private async drive(key: string, s: SyncState): Promise<void> {
    try {
      do {
        s.again = false;
        try {
          await this.sync(key);
          s.failures = 0;
        } catch (err) {
          s.failures++;
          const delay = this.backoff.delay(s.failures);
          this.d.log.warn('ContainerRestart not synced; retrying', { cr: key, error: String(err instanceof Error ? err.message : err), retryInMs: delay });
          this.d.clock
            .sleep(delay, this.stopping.signal)
            .then(() => this.enqueue(key))
            .catch(() => undefined);
        }
      } while (s.again && !this.stopping.signal.aborted);
    } finally {
      s.running = false;
    }
  }

  private now(): string {
    return new Date(this.d.clock.now()).toISOString();
  }

  /** What taking a request (take.ts) borrows of this controller. */
  private host(): TakeHost {
    return {
      d: this.d,
      waiting: this.waiting,
      keyByOp: this.keyByOp,
      admissionUnavailable: this.admissionUnavailable,
      mine: (cr) => this.mine(cr),
      now: () => this.now(),
      wakeAt: (key, at) => this.wakeAt(key, at),
      report: (cr, result, reason) => this.report(cr, result, reason),
      write: (cr, compute) => this.write(cr, compute),
    };
  }

  /** Brings one object one step closer to done; idempotent, so it may run any number of times. */
  private async sync(key: string): Promise<void> {
    let cr = this.latest.get(key);
    if (!cr || this.stopping.signal.aborted) return;
    // Each way of leaving an object alone is logged (debug): the sign tests wait for before they check that
    // nothing was done.
    if (isFinished(cr.status?.phase) || cr.status?.operationId) this.waiting.remove(key);
    if (isFinished(cr.status?.phase)) {
      this.d.log.debug('ContainerRestart already finished', { cr: key, phase: cr.status?.phase });
      return this.expire(cr);
    }
    if (!this.mine(cr)) {
      this.waiting.remove(key);
      this.d.log.debug('ContainerRestart left to another agent (taken by another, or for another node)', { cr: key, node: cr.status?.nodeName });
      return;
    }

    if (!cr.status?.operationId) {
      const taken = await takeRequest(this.host(), cr, key);
      if (!taken) return;
      cr = taken;
    }
    const opId = cr.status?.operationId ?? '';
    this.keyByOp.set(opId, key);

    if (!this.d.engine.has(opId) && !(await resumeRequest(this.host(), cr, key, opId))) return;
    // An operation admitted without a Pending record (RestartIntake.record) shows as its claim does, Pending, until the
    // journal has it: an agent that stops before then finds the object claimed, Pending and not journaled, and
    // reviews its requester again and submits it again (not a lost journal). The write its first record's change
    // brings is made then, and none is sent beside the restart's own calls between the claim and that record.
    if (!this.d.engine.recorded(opId) && !isTerminal(this.d.engine.get(opId).state)) return;
    // Progress (a watch event of the object, its own write's echo too, brings a sync) waits out the coalescing.
    if (!isTerminal(this.d.engine.get(opId).state) && this.pace.held(key)) return;
    const written = await this.write(cr, (cur) => (cur.status?.operationId === opId ? statusFromOperation(cur, this.d.engine.get(opId), this.d.nodeName, this.now()) : undefined));
    if (isFinished(written.status?.phase)) {
      const op = this.d.engine.get(opId);
      this.report(written, op.state, op.reason ?? '');
      await this.expire(written);
    }
  }

  /** Reports a request whose status is final to the metrics, once per request. */
  private report(cr: ContainerRestart, result: string, reason: string): void {
    const uid = cr.metadata.uid ?? '';
    if (!this.d.metrics || this.reported.has(uid)) return;
    this.reported.add(uid);
    const began = Date.parse(cr.status?.startTime ?? '');
    const ended = Date.parse(cr.status?.completionTime ?? '');
    this.d.metrics.finished(result, reason, Number.isNaN(began) || Number.isNaN(ended) ? 0 : (ended - began) / 1000);
  }

  /** Whether this agent may act on the object: nobody took it yet, or this agent did. */
  private mine(cr: ContainerRestart): boolean {
    const st = cr.status;
    if (st?.nodeName && st.nodeName !== this.d.nodeName) return false;
    return !st?.agentId || st.agentId === this.d.agentId;
  }

  private async write(cr: ContainerRestart, compute: (cur: ContainerRestart) => ReturnType<typeof statusFromOperation> | undefined): Promise<ContainerRestart> {
    const key = keyOf(cr);
    const out = await writeStatus(this.d.api, cr, compute, (attempt) => this.d.log.info('status write conflicted (409); read again and retried', { cr: key, attempt }));
    if (out !== cr) {
      this.latest.set(key, out);
      this.pace.wrote(key);
    }
    return out;
  }

  /** Looks at the request again at time at (ms), once per request. */
  private wakeAt(key: string, at: number): void {
    if (this.wakes.has(key)) return;
    this.wakes.add(key);
    this.d.clock
      .sleep(Math.max(0, at - this.d.clock.now()), this.stopping.signal)
      .then(() => {
        this.wakes.delete(key);
        this.enqueue(key);
      })
      .catch(() => undefined);
  }

  /** Deletes a finished object this node ran once its TTL has passed; otherwise comes back when it has. */
  private async expire(cr: ContainerRestart): Promise<void> {
    const ttl = cr.spec.ttlSecondsAfterFinished;
    if (ttl === undefined || !cr.status?.nodeName || !this.mine(cr) || !cr.status.completionTime) return;
    const due = Date.parse(cr.status.completionTime) + ttl * 1000;
    const wait = due - this.d.clock.now();
    const key = keyOf(cr);
    if (wait > 0) {
      this.d.clock
        .sleep(wait, this.stopping.signal)
        .then(() => this.enqueue(key))
        .catch(() => undefined);
      return;
    }
    try {
      await this.d.api.delete(cr.metadata.namespace ?? 'default', cr.metadata.name ?? '', cr.metadata.uid);
      this.d.log.info('ContainerRestart deleted after its TTL', { cr: key, ttlSeconds: ttl });
    } catch (err) {
      if (!AgentError.is(err, 'NotFound') && !isConflict(err)) throw err;
    }
    this.forget(key);
  }
}
