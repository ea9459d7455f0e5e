// The kubelet strategy's hooks into the drain, kept out of the strategy: drainPod() before the first container's
// stop or patch (shareDrain() for each later container of the operation: one drain a pod), and
// wayBack() once the last container is verified (the condition True again, then the address seen ready in
// the slices, recorded with the window without ready endpoints); with min-ready 0, openAtStart() sets the
// condition True already as the new instance starts (closeForRollback() undoes that before a rollback). Also
// the note on a pod that cannot be drained and has no preStop hook either.
import type { V1Container, V1Pod } from '../../k8s/client.js';
import type { Clock } from '../../clock.js';
import type { ContainerTarget, Operation } from '../../engine/operation.js';
import type { StepContext } from '../../engine/restart-strategy.js';
import type { ConditionWriter } from '../condition-writer.js';
import { EventReasons, type PodEvents } from '../pod-events.js';
import { preStopHandler } from '../pre-stop.js';
import { ConditionReasons, READY_CONDITION } from '../ready-condition.js';
import { restartedMessage, touchedContainers } from '../restarted-message.js';
import type { Drainer, DrainRecord } from './drainer.js';
import { lastGroup, lastOfPod, lastStep, podDrainer, podTargets, sharedDrainNote } from './pod-drain.js';

/** Longest wait for the address to be a ready endpoint again after the last container is verified. */
export const READY_AGAIN_MS = 10_000;

/** How the Draining step of a pod left in its Services (the only ready endpoint of one) begins. */
const SOLE_NOTE = 'the only ready endpoint of';

/** What the hooks need. */
export interface WayBackDeps {
  drainer: Drainer;
  conditions: ConditionWriter;
  events: PodEvents;
  clock: Clock;
}

/** The drain's key for an operation (one per operation: its containers share the pod's address). */
const keyOf = (op: Operation) => `${op.id}/`;

/** Opens the drain's slice feed of an operation, before the condition that takes the address out is written. */
export function openDrain(d: WayBackDeps, op: Operation, ns: string): void {
  d.drainer.open(keyOf(op), ns);
}

/**
 * Whether the pod is the only ready endpoint of every Service that lists it (from the drain's first view of the
 * slices, waited for at most boundMs): then it is not drained, which t's Draining step and traffic note say.
 */
export async function soleEndpoint(d: WayBackDeps, op: Operation, t: ContainerTarget, ns: string, ip: string, podUid: string, boundMs: number, ctx: Pick<StepContext, 'publish'>): Promise<boolean> {
  if (boundMs <= 0) return false;
  const services = await d.drainer.soleOf(keyOf(op), ns, { ip, podUid }, boundMs);
  if (!services) return false;
  const step = lastStep(t, 'Draining');
  const note = `${SOLE_NOTE} ${services.join(', ')}: not drained (nowhere else to send traffic); its readiness follows the container's`;
  if (step) step.detail = note;
  t.traffic = note;
  ctx.publish();
  return true;
}

/** Drains the pod's address for container t, within boundMs, and records what was waited on in its Draining step. */
export async function drainPod(d: WayBackDeps, op: Operation, t: ContainerTarget, ns: string, ip: string, podUid: string, boundMs: number, ctx: Pick<StepContext, 'publish'>): Promise<DrainRecord> {
  const rec = await d.drainer.drain(keyOf(op), ns, { ip, podUid }, boundMs);
  const step = lastStep(t, 'Draining');
  if (step) step.detail = rec.detail;
  t.traffic = rec.drained ? 'drained before the stop' : `not fully drained: ${rec.detail}`;
  ctx.publish();
  return rec;
}

/**
 * Container t goes within the drain that container `by` of the same operation began (the pod is drained once,
 * whatever number of containers it restarts): its Draining step and traffic note say so, and nothing is waited for.
 */
export function shareDrain(t: ContainerTarget, by: ContainerTarget, ctx: Pick<StepContext, 'publish'>): void {
  const step = lastStep(t, 'Draining');
  if (step) step.detail = sharedDrainNote(by);
  t.traffic = by.traffic?.startsWith(SOLE_NOTE) ? by.traffic : `drained before the stop, within the pod's one drain (begun for ${by.name})`;
  ctx.publish();
}

/**
 * After container t is verified: when it is the last container the operation restarts, the condition goes True
 * (as the operation's end would write it) and the address is waited for as a ready endpoint again, at most
 * READY_AGAIN_MS and never past the deadline; recorded in t's Verified step and traffic note.
 */
export async function wayBack(d: WayBackDeps, op: Operation, t: ContainerTarget, ns: string, name: string, ip: string, podUid: string, strategy: string, ctx: Pick<StepContext, 'publish' | 'deadline'>): Promise<void> {
  if (!lastOfPod(op, t, strategy) || !t.steps.some((s) => s.step === 'Draining') || ip === '') return;
  // (A container replaced together with one that failed goes on to its end; the operation's end writes the outcome.)
  if (!podTargets(op, strategy).every((c) => c === t || c.step === 'Done')) return;
  if (!op.containers.some((c) => c.strategy === strategy && lastStep(c, 'Draining')?.detail !== undefined)) return; // not drained
  await d.conditions.set(ns, name, restartedCondition(op, strategy));
  const bound = Math.max(0, Math.min(READY_AGAIN_MS, ctx.deadline - d.clock.now()));
  const back = await d.drainer.readyAgain(keyOf(op), ns, { ip, podUid }, bound);
  const step = lastStep(t, 'Verified');
  if (step) step.detail = back.detail;
  if (back.unservedMs !== undefined) t.unservedMs = back.unservedMs;
  t.traffic = `${t.traffic ?? 'drained'}; ${back.detail}`;
  // (A pod left True all along, the only endpoint, sees the message change only.)
  ctx.publish();
}

/** The condition True again after the operation's drained containers: what the way back and the end write. */
function restartedCondition(op: Operation, strategy: string) {
  return { status: 'True' as const, reason: ConditionReasons.Restarted, message: restartedMessage(touchedContainers(op, strategy)) };
}

/** Whether the operation's drain took the pod's address out of its Services (not left in as their only endpoint). */
function drainedOut(op: Operation, strategy: string): boolean {
  const by = podDrainer(op, strategy);
  const detail = by && lastStep(by, 'Draining')?.detail;
  return detail !== undefined && !detail.startsWith(SOLE_NOTE);
}

/**
 * Whether the condition goes True as soon as container t's new instance is seen running, before the agent has
 * verified it: with min-ready 0 the agent has nothing of its own to wait for, and the kubelet's readiness (the
 * readiness probe; running, without one) is what verification waits for anyway. The condition True while the
 * new instance is not ready leaves the pod not Ready (the kubelet's Ready needs every container ready and every
 * gate True), and the kubelet then sets Ready in the same pod sync that follows the probe's success, instead of
 * in a later sync after the agent wrote the gate (docs/kubernetes.md, "the gate at the start"). Only for the
 * last container the operation restarts, or one replaced together with the last (pod-drain.ts, lastGroup), and
 * when the pod's drain took the address out.
 */
export function opensAtStart(op: Operation, t: ContainerTarget, strategy: string): boolean {
  return op.request.minReadyMs === 0 && lastGroup(op, t, strategy).length > 0 && drainedOut(op, strategy);
}

/** The condition True once t's new instance runs (see opensAtStart); posted in order, not waited for. */
export function openAtStart(d: WayBackDeps, op: Operation, t: ContainerTarget, ns: string, name: string, strategy: string): void {
  d.conditions.post(ns, name, restartedCondition(op, strategy));
}

/**
 * Once the new instance failed (before the old image is put back, or the operation ends Failed): a condition
 * opened at the start goes False again, queued after that write, so that no instance serves until the
 * operation's end writes the outcome. Nothing is written when the condition says so already.
 */
export function closeForRollback(d: WayBackDeps, op: Operation, t: ContainerTarget, ns: string, name: string, strategy: string, why: string): Promise<unknown> {
  if (!opensAtStart(op, t, strategy)) return Promise.resolve();
  return d.conditions.set(ns, name, { status: 'False', reason: ConditionReasons.Restarting, message: `the restart of container ${t.name} did not succeed (${why}): not serving until it ends` });
}

/** Ends the drain of an operation that ended without its way back. */
export function releaseDrain(d: WayBackDeps, op: Operation): Promise<void> {
  return d.drainer.release(keyOf(op));
}

/**
 * A pod that does not gate its readiness on the condition cannot be drained; when container t has no preStop
 * hook either (or it is skipped), clients see the stop. Says so on t and in an Event.
 */
export function noteUndrained(d: WayBackDeps, op: Operation, t: ContainerTarget, pod: V1Pod, spec: V1Container | undefined): void {
  const hook = spec && !(op.request.skipPreStop && t.newImage === t.oldImage) && preStopHandler(spec);
  if (hook) {
    t.traffic = `not drained (no readiness gate on ${READY_CONDITION}); its preStop hook ran before the stop`;
    return;
  }
  t.traffic = `restarted undrained: the pod has no readiness gate on ${READY_CONDITION} and container ${t.name} ${spec && preStopHandler(spec) ? 'had its preStop hook skipped' : 'has no preStop hook'}, so clients could see the stop`;
  void d.events.record(pod, t.name, 'Warning', EventReasons.RestartedUndrained, `Container ${t.name} restarted undrained: add the readiness gate ${READY_CONDITION} to the pod (or a preStop hook) so clients behind its Services do not see the stop`);
}
