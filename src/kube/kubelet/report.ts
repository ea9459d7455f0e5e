// What the kubelet strategy tells the cluster about a restart: the pod's readiness-gate condition (Draining,
// Restarting, then the outcome) and the Events that go with it (by default only where the kubelet would record
// one: --pod-events). Nothing here waits on the restart itself
// except the outcome, written once the operation has ended.
import type { V1Pod } from '../../k8s/client.js';
import type { Logger } from '../../log.js';
import type { ContainerTarget, Operation } from '../../engine/operation.js';
import { Reasons } from '../../engine/reasons.js';
import type { ConditionWriter } from '../condition-writer.js';
import { containerStatus } from '../container-status.js';
import type { KubeApi } from '../../k8s/kube-api.js';
import { EventReasons, type PodEvents } from '../pod-events.js';
import { ConditionReasons, READY_CONDITION } from '../ready-condition.js';
import { describeRestart, restartedMessage, touchedContainers } from '../restarted-message.js';
import { splitName } from './pod-name.js';

/** What reporting needs. */
export interface ReportDeps {
  api: KubeApi;
  conditions: ConditionWriter;
  events: PodEvents;
  log: Logger;
  /**
   * Also record the Events the kubelet would not record (--pod-events all): Draining before a gated drain, and
   * Restarted at the end. Without it the pod's Events are the kubelet's own for the stop and start, the agent's
   * Killing for a stop of its own, Pulling and Pulled for a pull of its own, and a Warning for every failure;
   * the drain and the outcome are in the pod's condition and the ContainerRestart's status.
   */
  narrate: boolean;
}

/** Writes the condition and records the Events of kubelet-strategy restarts. */
export class RestartReport {
  constructor(private readonly d: ReportDeps) {}

  /**
   * Condition False (Draining) before the pod's address is drained, once for every container the operation
   * restarts (t the first, all of them named); resolves with the pod as written.
   */
  async draining(pod: V1Pod, t: ContainerTarget, names: string[] = [t.name]): Promise<V1Pod> {
    const [ns, name] = [pod.metadata?.namespace ?? '', pod.metadata?.name ?? ''];
    const which = `${names.length > 1 ? 'containers' : 'container'} ${names.join(', ')}`;
    const written = await this.d.conditions.set(ns, name, { status: 'False', reason: ConditionReasons.Draining, message: `draining before restarting ${which}` }, pod);
    if (this.d.narrate) void this.d.events.record(written, names.length > 1 ? undefined : t.name, 'Normal', EventReasons.Draining, `Draining the pod's address from its EndpointSlices before restarting ${which}`);
    return written;
  }

  /**
   * For a pod that does not gate its readiness on the condition (nothing to drain): the Draining event, posted
   * once the stop or patch is under way, not waited for. The condition is not written here, only with the
   * outcome: on such a pod it gates nothing, and a pod status write beside a stop brings the kubelet a sync that
   * ends after the old instance's exit, so that its next sync, the one that starts the new instance, waits for a
   * relist (about 1 s; bench:k8s row (a) took 1.1 s in 11 of 16 rounds with it, against 0.25 s for the bare stop).
   */
  ungated(pod: V1Pod, t: ContainerTarget): void {
    void this.d.events.record(pod, t.name, 'Normal', EventReasons.Draining, `Restarting container ${t.name}; the pod does not gate its readiness on ${READY_CONDITION}, so it keeps receiving traffic`);
  }

  /** Sets the condition and records events once an operation with kubelet-strategy containers has ended. */
  async finished(op: Operation): Promise<void> {
    const mine = touchedContainers(op, 'kubelet');
    if (mine.length === 0) return; // nothing was touched: the condition was not changed either
    const [ns, name] = splitName(op.podName);
    const pod = await this.d.api.readPod(ns, name);
    const describe = describeRestart;
    if (op.state === 'Succeeded') {
      await this.d.conditions.set(ns, name, { status: 'True', reason: ConditionReasons.Restarted, message: restartedMessage(mine) });
      if (this.d.narrate) await this.d.events.record(pod, mine.length === 1 ? mine[0].name : undefined, 'Normal', EventReasons.Restarted, `Restarted container ${mine.map(describe).join(', ')}`);
      return;
    }
    const notRunning = mine.filter((c) => containerStatus(pod, c.name)?.state?.running === undefined);
    const rolledBack = mine.filter((c) => c.step === 'RolledBack' && c.rollbackId !== '');
    const why = op.error ?? 'the restart failed';
    // A Warning Event's reason is the failure's own (a constant of engine/reasons.ts), as in every other output.
    const reasonOf = (c: ContainerTarget) => c.reason ?? op.reason ?? Reasons.ReplacementFailed;
    if (notRunning.length > 0) {
      await this.d.conditions.set(ns, name, { status: 'False', reason: ConditionReasons.RestartFailed, message: `${notRunning.map((c) => c.name).join(', ')} not running: ${why}` });
      for (const c of notRunning) await this.d.events.record(pod, c.name, 'Warning', reasonOf(c), `Restart of container ${c.name} (image ${c.newImage}) failed: ${c.error ?? why}`);
      return;
    }
    for (const c of rolledBack) await this.d.events.record(pod, c.name, 'Warning', reasonOf(c), `Rolled container ${c.name} back to image ${c.oldImage}: ${c.error ?? why}`);
    await this.d.conditions.set(ns, name, {
      status: 'True',
      reason: rolledBack.length > 0 ? ConditionReasons.RolledBack : ConditionReasons.Ready,
      message: rolledBack.length > 0 ? `rolled back ${rolledBack.map((c) => `${c.name} to ${c.oldImage}`).join(', ')}: ${why}` : `restart did not complete, every container runs: ${why}`,
    });
  }

  /**
   * At start-up: an agent that died between journaling an operation's end and writing the condition left it
   * False (Draining or Restarting). For each pod so left, with no unfinished operation, the last ended
   * operation's outcome is written again. Never over a later operation's drain: not while `unfinished` says an
   * operation on the pod is under way (asked just before the write: one may have begun since start-up), nor when
   * the condition turned False after the operation ended (a later operation, or a later pod of the same name, set
   * it: the journal keeps operations of pods long gone).
   */
  async reconcile(ops: Operation[], unfinished: (podName: string) => boolean = () => false): Promise<void> {
    const byPod = new Map<string, Operation>();
    for (const op of [...ops].sort((a, b) => a.createdAt.localeCompare(b.createdAt))) {
      if (op.containers.some((c) => c.strategy === 'kubelet')) byPod.set(op.podName, op);
    }
    for (const [podName, op] of byPod) {
      if (!op.finishedAt) continue;
      const [ns, name] = splitName(podName);
      const pod = await this.d.api.readPod(ns, name).catch(() => undefined);
      const cond = pod?.status?.conditions?.find((c) => c.type === READY_CONDITION);
      if (cond?.status !== 'False' || (cond.reason !== ConditionReasons.Draining && cond.reason !== ConditionReasons.Restarting)) continue;
      // (lastTransitionTime has whole seconds: a False of the same second as the end still counts as this one's.)
      const since = Date.parse(String(cond.lastTransitionTime ?? ''));
      if (!Number.isNaN(since) && since > Date.parse(op.finishedAt)) continue;
      if (unfinished(podName)) continue;
      this.d.log.info('writing the outcome of an operation whose end the condition missed', { op: op.id, pod: podName, state: op.state });
      await this.finished(op);
    }
  }
}
