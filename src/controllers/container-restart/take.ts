// Taking a ContainerRestart for this agent (controller.ts): the first look at an unclaimed request (its pod
// here, the requester's check and the claim made at once while the engine plans it), and the resumption of a
// request claimed but never journaled. Both leave a refused request with its final status.
import { AgentError } from '../../errors.js';
import { RefusalReasons } from '../../engine/reasons.js';
import type { ContainerRestartControllerDeps } from './controller-deps.js';
import { restartRequestFor } from './request.js';
import { checkRequester, type RequesterContext } from './requester-check.js';
import { RESULT_REFUSED } from './metrics.js';
import { claimedStatus, REASON_REFUSED, refusedStatus, unclaimed, type statusFromOperation } from './status.js';
import { gateUnclaimed } from './take-gate.js';
import { isFinished, keyOf, type ContainerRestart } from './types.js';
import type { WaitingRequests } from './waiting.js';

/** What taking a request borrows of the controller. */
export interface TakeHost {
  d: ContainerRestartControllerDeps;
  /** Unclaimed requests waiting for their pod to reach this node. */
  waiting: WaitingRequests;
  /** The object key of each operation id this controller follows. */
  keyByOp: Map<string, string>;
  /** Says once that the dry run as the requester cannot be made here. */
  admissionUnavailable: () => void;
  /** Whether this agent may act on the object. */
  mine(cr: ContainerRestart): boolean;
  /** The clock's time, RFC 3339. */
  now(): string;
  /** Looks at the request again at time at (ms). */
  wakeAt(key: string, at: number): void;
  /** Reports a request whose status is final to the metrics, once per request. */
  report(cr: ContainerRestart, result: string, reason: string): void;
  /** Writes a computed status with optimistic concurrency; the object as last read or written. */
  write(cr: ContainerRestart, compute: (cur: ContainerRestart) => ReturnType<typeof statusFromOperation> | undefined): Promise<ContainerRestart>;
}

/**
 * Takes an unclaimed request whose pod is on this node: the object as claimed by this agent, with its operation
 * submitted to the engine; undefined when it is left alone, waits for its pod, or was refused.
 */
export async function takeRequest(h: TakeHost, cr: ContainerRestart, key: string): Promise<ContainerRestart | undefined> {
  const ns = cr.metadata.namespace ?? 'default';
  const uid = cr.metadata.uid ?? '';
  const trace = h.d.engine.trace;
  trace.mark(uid, 'ContainerRestart seen');
  // Noted as waiting before the pod is looked for, so that a pod arriving meanwhile brings the request back.
  h.waiting.add(key, ns, cr.spec.podName);
  const gate = await gateUnclaimed(cr, h.d.clock.now(), { ...h.d, admissionUnavailable: h.admissionUnavailable });
  if ('wait' in gate) {
    if (gate.wait === 'absent') h.d.log.debug('ContainerRestart left alone: its pod is not on this node', { cr: key, pod: `${ns}/${cr.spec.podName}` });
    else h.d.log.debug('ContainerRestart waits: its pod has not started on this node yet', { cr: key, pod: `${ns}/${cr.spec.podName}` });
    if (gate.due !== undefined) h.wakeAt(key, gate.due);
    trace.drop(uid);
    return undefined;
  }
  h.waiting.remove(key);
  if ('refuse' in gate) {
    trace.drop(uid);
    await refuseRequest(h, cr, gate.refuse);
    return undefined;
  }
  const ctx = gate.take;
  let req: ReturnType<typeof restartRequestFor>;
  try {
    req = restartRequestFor(cr, h.d.defaults);
  } catch (err) {
    trace.drop(uid);
    // The requester's refusal comes first, as it would without the request's own error (no admission dry run
    // of a request the agent will not run anyway).
    const refused = await checkRequester(cr, h.d.access, h.d.selfPod, { ...ctx, admission: undefined }).then(() => undefined, (e: unknown) => e ?? new Error('refused'));
    if (AgentError.is(refused, 'Unavailable')) throw refused;
    await refuseRequest(h, cr, refused ?? err);
    return undefined;
  }
  return claimAndSubmit(h, cr, key, ctx, req);
}

/**
 * The requester's check and the claim are made at once, while the engine plans the request (which only
 * reads); the engine records and runs it only once both are through. A request its creator could not make
 * themselves is refused before anything is touched: a claim written meanwhile is taken back by the refusal,
 * which leaves no operation in the status (the operation id is in the status before the journal has it, as
 * ever). The object as claimed, or undefined when it was refused or another agent's claim landed first.
 */
async function claimAndSubmit(h: TakeHost, seen: ContainerRestart, key: string, ctx: RequesterContext, req: ReturnType<typeof restartRequestFor>): Promise<ContainerRestart | undefined> {
  const ns = seen.metadata.namespace ?? 'default';
  const uid = seen.metadata.uid ?? '';
  const trace = h.d.engine.trace;
  const checked: Promise<{ refused: unknown } | undefined> = checkRequester(seen, h.d.access, h.d.selfPod, ctx).then(
    () => void trace.mark(uid, 'requester checked'),
    (refused: unknown) => ({ refused }),
  );
  // Never over a refusal or another agent's claim that landed meanwhile (any agent refuses an expired request).
  const claimable = (cur: ContainerRestart) => !cur.status?.operationId && !isFinished(cur.status?.phase) && h.mine(cur);
  const writing: Promise<{ written: ContainerRestart } | { err: unknown }> = h.write(seen, (cur) => (claimable(cur) ? claimedStatus(cur, uid, h.d.nodeName, h.d.agentId, h.now()) : undefined)).then(
    (written) => (trace.mark(uid, 'claim written'), { written }),
    (err: unknown) => ({ err }),
  );
  const claiming = Promise.all([checked, writing]).then(([refusal, claim]) => (refusal ? { ...refusal, claim } : claim));
  const holds = (c: ContainerRestart) => c.status?.operationId === uid && h.mine(c);
  h.keyByOp.set(uid, key);
  let planError: unknown;
  try {
    await h.d.engine.restart(req, { id: uid, admit: async () => ((r) => 'written' in r && holds(r.written))(await claiming) });
  } catch (err) {
    planError = err;
  }
  const claim = await claiming;
  if ('refused' in claim) {
    h.keyByOp.delete(uid);
    trace.drop(uid);
    if (AgentError.is(claim.refused, 'Unavailable')) throw claim.refused;
    // A claim that landed meanwhile is taken back by the refusal: no operation is left in the status.
    await refuseRequest(h, 'written' in claim.claim ? claim.claim.written : seen, claim.refused, uid);
    return undefined;
  }
  if ('err' in claim) throw claim.err;
  const cr = claim.written;
  if (!holds(cr)) {
    h.keyByOp.delete(uid);
    return undefined;
  }
  h.d.log.info('ContainerRestart taken', { cr: key, op: uid, pod: `${ns}/${cr.spec.podName}` });
  if (planError !== undefined) {
    if (AgentError.is(planError, 'Unavailable')) throw planError;
    await refuseRequest(h, cr, planError);
    return undefined;
  }
  h.d.log.info('ContainerRestart submitted', { cr: key, op: uid });
  return cr;
}

/**
 * Submits again a request this agent claimed (opId in its status) that the engine has no operation for; false
 * when it was refused instead (its journal record lost, or its requester's check failed).
 */
export async function resumeRequest(h: TakeHost, cr: ContainerRestart, key: string, opId: string): Promise<boolean> {
  const ns = cr.metadata.namespace ?? 'default';
  if (cr.status?.phase !== 'Pending') {
    await refuseRequest(h, cr, new AgentError('FailedPrecondition', `the agent on node ${h.d.nodeName} has no record of operation ${opId} (its journal was lost); it is not run again`, { reason: RefusalReasons.JournalLost }));
    return false;
  }
  // Claimed, but not journaled (the agent stopped in between, or the requester's check, made beside the
  // claim, could not be made): the check is made again before the request is recorded.
  const found = await h.d.findPod(ns, cr.spec.podName);
  const ctx: RequesterContext = { pod: found?.api, accounts: h.d.accounts, admission: h.d.admission, admissionUnavailable: h.admissionUnavailable };
  const refused = await checkRequester(cr, h.d.access, h.d.selfPod, ctx).then(() => undefined, (e: unknown) => e ?? new Error('refused'));
  if (refused !== undefined) {
    if (AgentError.is(refused, 'Unavailable')) throw refused;
    await refuseRequest(h, cr, refused, opId);
    return false;
  }
  try {
    await h.d.engine.restart(restartRequestFor(cr, h.d.defaults), { id: opId });
    h.d.log.info('ContainerRestart submitted', { cr: key, op: opId });
  } catch (err) {
    if (AgentError.is(err, 'Unavailable')) throw err;
    await refuseRequest(h, cr, err);
    return false;
  }
  return true;
}

/**
 * Writes the final status of a request refused before anything was touched. claimedAs: the operation id of a
 * claim this agent wrote for it (the claim and the requester's check are made at once); the refusal takes that
 * claim back, so that no operation is left in the status.
 */
export async function refuseRequest(h: TakeHost, cr: ContainerRestart, err: unknown, claimedAs?: string): Promise<void> {
  const message = err instanceof Error ? err.message : String(err);
  // The refusal's own reason, set where it was refused; a request the agent cannot read is InvalidRequest.
  const reason = (err instanceof AgentError && err.reason) || (AgentError.is(err, 'InvalidArgument') ? RefusalReasons.InvalidRequest : REASON_REFUSED);
  h.d.log.info('ContainerRestart refused', { cr: keyOf(cr), reason, message });
  const uid = cr.metadata.uid;
  // Never over another agent's claim that landed meanwhile (the write re-reads after a conflict).
  const written = await h.write(cr, (cur) => (cur.metadata.uid === uid && !isFinished(cur.status?.phase) && h.mine(cur) ? refusedStatus(claimedAs ? unclaimed(cur, claimedAs) : cur, message, h.d.nodeName, h.d.agentId, h.now(), reason) : undefined));
  if (isFinished(written.status?.phase) && written.status?.conditions?.some((c) => c.reason === reason)) h.report(written, RESULT_REFUSED, reason);
}
