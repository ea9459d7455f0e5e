// The kubelet strategy's two hooks into the drain, kept out of the strategy: drainPod() before the stop, and
// wayBack() once the last container is verified (the condition True again, then the address seen ready in
// the slices, recorded with the window without ready endpoints). Also the note on a pod that cannot be
// drained and has no preStop hook either.
import type { V1Container, V1Pod } from '../client.js';
import type { Clock } from '../../clock.js';
import type { ContainerTarget, Operation, StepRecord } from '../../engine/operation.js';
import type { StepContext } from '../../engine/restart-strategy.js';
import type { ConditionWriter } from '../condition-writer.js';
import { EventReasons, type PodEvents } from '../pod-events.js';
import { preStopHandler } from '../pre-stop.js';
import { ConditionReasons, READY_CONDITION } from '../ready-condition.js';
import { describeRestart, touchedContainers } from '../restarted-message.js';
import type { Drainer, DrainRecord } from './drainer.js';

/** Longest wait for the address to be a ready endpoint again after the last container is verified. */
export const READY_AGAIN_MS = 10_000;

/** What the hooks need. */
export interface WayBackDeps {
  drainer: Drainer;
  conditions: ConditionWriter;
  events: PodEvents;
  clock: Clock;
}

/** The drain's key for an operation (one per operation: its containers share the pod's address). */
const keyOf = (op: Operation) => `${op.id}/`;

/** The last step record of a kind (the one entered last). */
function lastStep(t: ContainerTarget, step: StepRecord['step']): StepRecord | undefined {
  return [...t.steps].reverse().find((s) => s.step === step);
}

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
  const note = `the only ready endpoint of ${services.join(', ')}: not drained (nowhere else to send traffic); its readiness follows the container's`;
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
 * After container t is verified: when it is the operation's last drained container, the condition goes True
 * (as the operation's end would write it) and the address is waited for as a ready endpoint again, at most
 * READY_AGAIN_MS and never past the deadline; recorded in t's Verified step and traffic note.
 */
export async function wayBack(d: WayBackDeps, op: Operation, t: ContainerTarget, ns: string, name: string, ip: string, podUid: string, strategy: string, ctx: Pick<StepContext, 'publish' | 'deadline'>): Promise<void> {
  const mine = touchedContainers(op, strategy);
  if (mine.at(-1) !== t || !t.steps.some((s) => s.step === 'Draining') || ip === '') return;
  if (!op.containers.some((c) => c.strategy === strategy && lastStep(c, 'Draining')?.detail !== undefined)) return; // not drained
  await d.conditions.set(ns, name, { status: 'True', reason: ConditionReasons.Restarted, message: `restarted ${mine.map(describeRestart).join(', ')}` });
  const bound = Math.max(0, Math.min(READY_AGAIN_MS, ctx.deadline - d.clock.now()));
  const back = await d.drainer.readyAgain(keyOf(op), ns, { ip, podUid }, bound);
  const step = lastStep(t, 'Verified');
  if (step) step.detail = back.detail;
  if (back.unservedMs !== undefined) t.unservedMs = back.unservedMs;
  t.traffic = `${t.traffic ?? 'drained'}; ${back.detail}`;
  // (A pod left True all along, the only endpoint, sees the message change only.)
  ctx.publish();
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
