// The agent's side of ContainerRestart objects: watches them, takes those whose pod runs on this node, runs
// each with the engine (the same engine and journal as an RPC restart), mirrors the operation into the object's
// status and deletes the object after its TTL.
//
// Exactly once: the operation id (the object's uid) is written to the status before the operation is submitted,
// and the engine journals the operation under that id before touching anything. An agent that restarts finds
// the id in the status and either follows the journaled operation or, if the journal never got it, submits it
// then. A request whose status says it ran but whose journal record is gone is failed, never run again.
import type { KubeConfig } from '../client.js';
import { AgentError } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { Engine } from '../../engine/engine.js';
import { isTerminal, type Operation } from '../../engine/operation.js';
import { Backoff } from '../../backoff.js';
import { Follower, followerDeps } from '../list-follower.js';
import { containerRestartPath, type ContainerRestartApi } from './api.js';
import type { AccessReviewer } from '../access-review.js';
import { restartRequestFor } from './request.js';
import type { RestartDefaults } from '../../engine/operation.js';
import { checkRequester, type RequesterContext, type SelfPod } from './requester-check.js';
import type { ServiceAccountReader } from '../requester-alive.js';
import type { AdmissionProbe } from '../admission-as-requester.js';
import type { FoundPod } from './pod-here.js';
import { gateUnclaimed } from './take-gate.js';
import { WaitingRequests } from './waiting.js';
import { RESULT_REFUSED, type ContainerRestartMetrics } from './metrics.js';
import { claimedStatus, REASON_REFUSED, refusedStatus, statusFromOperation, unclaimed } from './status.js';
import { RefusalReasons } from '../../engine/reasons.js';
import { writeStatus } from './status-writer.js';
import { CR_GROUP, CR_PLURAL, isFinished, keyOf, newer, type ContainerRestart } from './types.js';

/** The CRD's name (deploy/crds/containerrestart.yaml). */
const CRD_NAME = `${CR_PLURAL}.${CR_GROUP}`;
/** How often a missing CRD (or a watch refused with 403) is looked for again. */
const CRD_RECHECK_MS = 30_000;

/** First delay before the watch is started again after a failure, and the longest, ms. */
const WATCH_BACKOFF_MS = { initialBackoffMs: 250, maxBackoffMs: 5000 };

/**
 * Least time between two status writes of a running operation's progress, ms. The claim (Pending) and the end are
 * written at once; in between, the status shows the operation as it is at most a second late, so a restart of
 * about 2 s costs one progress write rather than one per step (issue 29).
 */
const STATUS_COALESCE_MS = 1000;

/** What the controller is built from. */
export interface ContainerRestartControllerDeps {
  kc: KubeConfig;
  api: ContainerRestartApi;
  engine: Pick<Engine, 'restart' | 'has' | 'recorded' | 'get' | 'on' | 'off' | 'trace'>;
  /** This node's name, written to the status of every request it takes. */
  nodeName: string;
  /** This agent's identity, stable across its restarts (see agentIdentity): two agents never run one request. */
  agentId: string;
  /** Watch one namespace; all when undefined. */
  namespace?: string;
  defaults: RestartDefaults;
  /** The pod namespace/name when it is on this node (pod-here.ts); undefined when it is not. */
  findPod(namespace: string, name: string): Promise<FoundPod | undefined>;
  /** Whether a request may name a standalone sandbox, one no API server knows (default: refused, PodNotInApiServer). */
  standalonePods?: boolean;
  /** Where a ServiceAccount requester is looked up before the claim (requester-alive.ts). */
  accounts?: ServiceAccountReader;
  /** Where an image change is tried first as a dry run as the requester (admission-as-requester.ts). */
  admission?: AdmissionProbe;
  /** Subscribes to this node's pod watch (each pod added or changed); returns the unsubscribe. */
  onPod?(listener: (namespace: string, name: string) => void): () => void;
  /** Checks the recorded requester's own rights before a request is taken (requester-check.ts). */
  access: AccessReviewer;
  /** The agent's own pod, which no request may target. */
  selfPod?: SelfPod;
  clock: Clock;
  log: Logger;
  /** Where each request this agent took is reported once, when its status turns final. */
  metrics?: ContainerRestartMetrics;
}

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
  /** Objects whose status write for a running operation waits out STATUS_COALESCE_MS. */
  private readonly coalescing = new Set<string>();
  /** When this agent last wrote each object's status (ms): progress waits STATUS_COALESCE_MS after it. */
  private readonly writtenAt = new Map<string, number>();
  private readonly onChange = (op: Operation) => {
    const key = this.keyByOp.get(op.id);
    if (!key) return;
    // The end is written at once, after the step that announced it has gone on to its side effect. Progress
    // (Pulling, Recreating, ...) is written once per STATUS_COALESCE_MS at most: the API server and the CPU it
    // shares with the agent and the kubelet are left to the restart's own calls (the patch, the stop).
    if (isTerminal(op.state)) setImmediate(() => this.enqueue(key));
    else if (!this.coalesced(key)) this.enqueue(key);
  };

  /**
   * Whether a progress write of key must wait (one was written less than STATUS_COALESCE_MS ago); if so, a sync
   * is due once it may be written, and the write then shows the operation as it is by then.
   */
  private coalesced(key: string): boolean {
    const wait = (this.writtenAt.get(key) ?? -Infinity) + STATUS_COALESCE_MS - this.d.clock.now();
    if (wait <= 0) return false;
    if (this.coalescing.has(key)) return true;
    this.coalescing.add(key);
    this.d.clock
      .sleep(wait, this.stopping.signal)
      .then(() => {
        this.coalescing.delete(key);
        this.enqueue(key);
      })
      .catch(() => this.coalescing.delete(key));
    return true;
  }

  /** Said once: the cluster does not let the agent make the dry run as the requester. */
  private readonly admissionUnavailable = () => {
    if (this.admissionUnavailableSaid) return;
    this.admissionUnavailableSaid = true;
    this.d.log.warn("cannot make the dry run of an image change as its requester: the agent may not impersonate here (deploy/rbac.yaml's impersonate rules, constrained impersonation of Kubernetes 1.36); admission sees the agent's own ServiceAccount");
  };
  private admissionUnavailableSaid = false;

  constructor(private readonly d: ContainerRestartControllerDeps) {
    this.backoff = new Backoff(d.clock, { initialMs: 250, maxMs: 5000 });
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
    this.writtenAt.delete(key);
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

  /** Brings one object one step closer to done; idempotent, so it may run any number of times. */
  private async sync(key: string): Promise<void> {
    let cr = this.latest.get(key);
    if (!cr || this.stopping.signal.aborted) return;
    const ns = cr.metadata.namespace ?? 'default';
    const uid = cr.metadata.uid ?? '';
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
      const trace = this.d.engine.trace;
      trace.mark(uid, 'ContainerRestart seen');
      // Noted as waiting before the pod is looked for, so that a pod arriving meanwhile brings the request back.
      this.waiting.add(key, ns, cr.spec.podName);
      const gate = await gateUnclaimed(cr, this.d.clock.now(), { ...this.d, admissionUnavailable: this.admissionUnavailable });
      if ('wait' in gate) {
        if (gate.wait === 'absent') this.d.log.debug('ContainerRestart left alone: its pod is not on this node', { cr: key, pod: `${ns}/${cr.spec.podName}` });
        else this.d.log.debug('ContainerRestart waits: its pod has not started on this node yet', { cr: key, pod: `${ns}/${cr.spec.podName}` });
        if (gate.due !== undefined) this.wakeAt(key, gate.due);
        return trace.drop(uid);
      }
      this.waiting.remove(key);
      if ('refuse' in gate) {
        trace.drop(uid);
        return this.refuse(cr, gate.refuse);
      }
      const ctx = gate.take;
      let req: ReturnType<typeof restartRequestFor>;
      try {
        req = restartRequestFor(cr, this.d.defaults);
      } catch (err) {
        trace.drop(uid);
        // The requester's refusal comes first, as it would without the request's own error (no admission dry run
        // of a request the agent will not run anyway).
        const refused = await checkRequester(cr, this.d.access, this.d.selfPod, { ...ctx, admission: undefined }).then(() => undefined, (e: unknown) => e ?? new Error('refused'));
        if (AgentError.is(refused, 'Unavailable')) throw refused;
        return this.refuse(cr, refused ?? err);
      }
      // The requester's check and the claim are made at once, while the engine plans the request (which only
      // reads); the engine records and runs it only once both are through. A request its creator could not make
      // themselves is refused before anything is touched: a claim written meanwhile is taken back by the refusal,
      // which leaves no operation in the status (the operation id is in the status before the journal has it, as
      // ever).
      const seen = cr;
      const checked: Promise<{ refused: unknown } | undefined> = checkRequester(seen, this.d.access, this.d.selfPod, ctx).then(
        () => void trace.mark(uid, 'requester checked'),
        (refused: unknown) => ({ refused }),
      );
      // Never over a refusal or another agent's claim that landed meanwhile (any agent refuses an expired request).
      const claimable = (cur: ContainerRestart) => !cur.status?.operationId && !isFinished(cur.status?.phase) && this.mine(cur);
      const writing: Promise<{ written: ContainerRestart } | { err: unknown }> = this.write(seen, (cur) => (claimable(cur) ? claimedStatus(cur, uid, this.d.nodeName, this.d.agentId, this.now()) : undefined)).then(
        (written) => (trace.mark(uid, 'claim written'), { written }),
        (err: unknown) => ({ err }),
      );
      const claiming = Promise.all([checked, writing]).then(([refusal, claim]) => (refusal ? { ...refusal, claim } : claim));
      const holds = (c: ContainerRestart) => c.status?.operationId === uid && this.mine(c);
      this.keyByOp.set(uid, key);
      let planError: unknown;
      try {
        await this.d.engine.restart(req, { id: uid, admit: async () => ((r) => 'written' in r && holds(r.written))(await claiming) });
      } catch (err) {
        planError = err;
      }
      const claim = await claiming;
      if ('refused' in claim) {
        this.keyByOp.delete(uid);
        trace.drop(uid);
        if (AgentError.is(claim.refused, 'Unavailable')) throw claim.refused;
        // A claim that landed meanwhile is taken back by the refusal: no operation is left in the status.
        return this.refuse('written' in claim.claim ? claim.claim.written : cr, claim.refused, uid);
      }
      if ('err' in claim) throw claim.err;
      cr = claim.written;
      if (!holds(cr)) {
        this.keyByOp.delete(uid);
        return;
      }
      this.d.log.info('ContainerRestart taken', { cr: key, op: uid, pod: `${ns}/${cr.spec.podName}` });
      if (planError !== undefined) {
        if (AgentError.is(planError, 'Unavailable')) throw planError;
        return this.refuse(cr, planError);
      }
      this.d.log.info('ContainerRestart submitted', { cr: key, op: uid });
    }
    const opId = cr.status?.operationId ?? '';
    this.keyByOp.set(opId, key);

    if (!this.d.engine.has(opId)) {
      if (cr.status?.phase !== 'Pending') {
        return this.refuse(cr, new AgentError('FailedPrecondition', `the agent on node ${this.d.nodeName} has no record of operation ${opId} (its journal was lost); it is not run again`, { reason: RefusalReasons.JournalLost }));
      }
      // Claimed, but not journaled (the agent stopped in between, or the requester's check, made beside the
      // claim, could not be made): the check is made again before the request is recorded.
      const found = await this.d.findPod(ns, cr.spec.podName);
      const ctx: RequesterContext = { pod: found?.api, accounts: this.d.accounts, admission: this.d.admission, admissionUnavailable: this.admissionUnavailable };
      const refused = await checkRequester(cr, this.d.access, this.d.selfPod, ctx).then(() => undefined, (e: unknown) => e ?? new Error('refused'));
      if (refused !== undefined) {
        if (AgentError.is(refused, 'Unavailable')) throw refused;
        return this.refuse(cr, refused, opId);
      }
      try {
        await this.d.engine.restart(restartRequestFor(cr, this.d.defaults), { id: opId });
        this.d.log.info('ContainerRestart submitted', { cr: key, op: opId });
      } catch (err) {
        if (AgentError.is(err, 'Unavailable')) throw err;
        return this.refuse(cr, err);
      }
    }
    // An operation admitted without a Pending record (Engine.record) shows as its claim does, Pending, until the
    // journal has it: an agent that stops before then finds the object claimed, Pending and not journaled, and
    // reviews its requester again and submits it again (not a lost journal). The write its first record's change
    // brings is made then, and none is sent beside the restart's own calls between the claim and that record.
    if (!this.d.engine.recorded(opId) && !isTerminal(this.d.engine.get(opId).state)) return;
    // Progress (a watch event of the object, its own write's echo too, brings a sync) waits out the coalescing.
    if (!isTerminal(this.d.engine.get(opId).state) && this.coalesced(key)) return;
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

  /**
   * Writes the final status of a request refused before anything was touched. claimedAs: the operation id of a
   * claim this agent wrote for it (the claim and the requester's check are made at once); the refusal takes that
   * claim back, so that no operation is left in the status.
   */
  private async refuse(cr: ContainerRestart, err: unknown, claimedAs?: string): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    // The refusal's own reason, set where it was refused; a request the agent cannot read is InvalidRequest.
    const reason = (err instanceof AgentError && err.reason) || (AgentError.is(err, 'InvalidArgument') ? RefusalReasons.InvalidRequest : REASON_REFUSED);
    this.d.log.info('ContainerRestart refused', { cr: keyOf(cr), reason, message });
    const uid = cr.metadata.uid;
    // Never over another agent's claim that landed meanwhile (the write re-reads after a conflict).
    const written = await this.write(cr, (cur) => (cur.metadata.uid === uid && !isFinished(cur.status?.phase) && this.mine(cur) ? refusedStatus(claimedAs ? unclaimed(cur, claimedAs) : cur, message, this.d.nodeName, this.d.agentId, this.now(), reason) : undefined));
    if (isFinished(written.status?.phase) && written.status?.conditions?.some((c) => c.reason === reason)) this.report(written, RESULT_REFUSED, reason);
  }

  private async write(cr: ContainerRestart, compute: (cur: ContainerRestart) => ReturnType<typeof statusFromOperation> | undefined): Promise<ContainerRestart> {
    const key = keyOf(cr);
    const out = await writeStatus(this.d.api, cr, compute, (attempt) => this.d.log.info('status write conflicted (409); read again and retried', { cr: key, attempt }));
    if (out !== cr) {
      this.latest.set(key, out);
      this.writtenAt.set(key, this.d.clock.now());
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
      if (!AgentError.is(err, 'NotFound') && !AgentError.is(err, 'Aborted')) throw err;
    }
    this.forget(key);
  }
}
