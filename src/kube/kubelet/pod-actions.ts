// The kubelet strategy's side effects on a pod: drain its address from its EndpointSlices, stop the old
// instance (the kubelet starts the next), or patch the container's image in the spec (the kubelet recreates
// exactly that container). Each is safe to repeat.
import type { V1Container, V1Pod } from '../../k8s/client.js';
import { AgentError } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { ContainerTarget, Operation } from '../../engine/operation.js';
import { Reasons } from '../../engine/reasons.js';
import { remainingGrace } from '../../engine/restart-plan.js';
import type { StepContext } from '../../engine/restart-strategy.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { DrainMetrics } from '../drain-metrics.js';
import { podDrainer, podTargets } from '../drain/pod-drain.js';
import { drainPod, openDrain, shareDrain, soleEndpoint, type WayBackDeps } from '../drain/way-back.js';
import type { KubeApi } from '../../k8s/kube-api.js';
import { EventReasons, type PodEvents } from '../pod-events.js';
import { preStopHandler, runPreStop } from '../pre-stop.js';
import { gatesOnCondition } from '../ready-condition.js';
import { specContainer } from '../restart-policy.js';
import { kubeletOptions } from './steps.js';
import type { PodCache } from './pod-cache.js';
import { splitName } from './pod-name.js';
import type { RestartReport } from './report.js';

/** What the actions need. */
export interface PodActionsDeps {
  api: KubeApi;
  runtime: Runtime;
  events: PodEvents;
  clock: Clock;
  log: Logger;
  cache: PodCache;
  report: RestartReport;
  /** How often a stop read back from the journal looks at the old container, ms. */
  pollMs: number;
  /** The drain (src/kube/drain/). */
  way: WayBackDeps;
  /** Where each part of a drain reports how long it took. */
  drainMetrics?: DrainMetrics;
}

/** Drain, stop and patch, for one container of a pod. */
export class PodActions {
  constructor(private readonly d: PodActionsDeps) {}

  /** Whether the pod is drained before a restart: it gates its readiness on the condition, and has an address. */
  drains(pod: V1Pod, op: Operation): boolean {
    return gatesOnCondition(pod) && (pod.status?.podIP ?? op.podIp ?? '') !== '';
  }

  /**
   * Condition False (Draining), then waits until the pod's address left its slices and the data plane (drain/);
   * the condition stays False (Draining) through the stop or patch, with no second write. The only ready endpoint of its Services is not taken out at all:
   * its readiness follows the container's, so the time without an endpoint is the container's own. A pod is
   * drained once an operation: a later container of it goes within the drain the first one began (pod-drain.ts).
   */
  async drain(op: Operation, t: ContainerTarget, pod: V1Pod, ctx: Pick<StepContext, 'deadline' | 'publish'>): Promise<V1Pod> {
    const by = podDrainer(op, 'kubelet', t);
    if (by) {
      shareDrain(t, by, ctx);
      return pod;
    }
    const [ns] = splitName(op.podName);
    const ip = pod.status?.podIP ?? op.podIp ?? '';
    const bound = Math.max(0, Math.min(kubeletOptions(op.request).drainMs, ctx.deadline - this.d.clock.now()));
    openDrain(this.d.way, op, ns);
    if (await soleEndpoint(this.d.way, op, t, ns, ip, pod.metadata?.uid ?? '', bound, ctx)) {
      this.d.log.info('not drained: the only ready endpoint of its Services', { op: op.id, pod: op.podName, detail: t.traffic });
      return pod;
    }
    const written = await this.d.report.draining(pod, t, podTargets(op, 'kubelet').map((c) => c.name));
    const res = await drainPod(this.d.way, op, t, ns, ip, written.metadata?.uid ?? '', bound, ctx);
    for (const p of res.parts) this.d.drainMetrics?.observe(p.part, p.ms / 1000, p.done);
    if (!res.drained) this.d.log.warn('drain cut short; going on', { op: op.id, pod: op.podName, boundMs: bound, detail: res.detail });
    else this.d.log.info('pod drained', { op: op.id, pod: op.podName, waitedMs: res.waitedMs, detail: res.detail });
    return written;
  }

  /**
   * Runs the old instance's preStop hook from the pod spec (the kubelet's semantics: its time comes out of the
   * grace period, with a 2 s floor); a failure is logged and recorded, and the stop goes on. Resolves with the
   * grace left for the stop, seconds.
   */
  async preStop(op: Operation, t: ContainerTarget, pod: V1Pod, spec: V1Container): Promise<number> {
    const began = this.d.clock.now();
    const res = await runPreStop(preStopHandler(spec)!, { container: spec, podIp: pod.status?.podIP ?? op.podIp, exec: (cmd, s) => this.d.runtime.exec(t.oldId, cmd, s), clock: this.d.clock }, op.request.graceSeconds * 1000);
    if (!res.ok) {
      this.d.log.warn('preStop hook failed', { op: op.id, container: t.name, reason: Reasons.PreStopHookError, detail: res.detail });
      void this.d.events.record(pod, t.name, 'Warning', EventReasons.FailedPreStopHook, `PreStopHook failed for container ${t.name}: ${res.detail}`);
    }
    return remainingGrace(op.request.graceSeconds, this.d.clock.now() - began);
  }

  /** Stops the old instance; once the call is under way, announce() writes what was held back for it. */
  async stop(t: ContainerTarget, pod: V1Pod, graceSeconds: number, announce?: () => void): Promise<void> {
    const stopping = this.d.runtime.stopContainer(t.oldId, graceSeconds);
    announce?.();
    void this.d.events.record(pod, t.name, 'Normal', EventReasons.Killing, `Stopping container ${t.name}`);
    await stopping;
  }

  /** Stopping read back from the journal: the stop was issued; stop only a container still running after its grace. */
  async resumeStop(op: Operation, t: ContainerTarget, pod: V1Pod): Promise<void> {
    const until = this.d.clock.now() + (op.request.graceSeconds + 2) * 1000;
    for (;;) {
      let state: string;
      try {
        state = await this.d.runtime.containerState(t.oldId);
      } catch (err) {
        if (AgentError.is(err, 'NotFound')) return;
        throw err;
      }
      if (state !== 'running') return;
      if (this.d.clock.now() >= until) break;
      await this.d.clock.sleep(this.d.pollMs);
    }
    this.d.log.warn('the container still runs after its grace period: the stop the journal records did not happen; stopping it now', { op: op.id, container: t.name });
    await this.stop(t, pod, 2);
  }

  /** Strategic-merge patch of one container's image in the pod spec (idempotent). */
  patchImage(ns: string, name: string, container: string, image: string, deadline: number): Promise<void> {
    return this.patchImages(ns, name, [{ container, image }], deadline);
  }

  /** One strategic-merge patch of several containers' images in the pod spec (idempotent: those already so are left out). */
  async patchImages(ns: string, name: string, images: { container: string; image: string }[], deadline: number): Promise<void> {
    const pod = await this.d.cache.fresh(ns, name, deadline);
    const lists: Record<string, { name: string; image: string }[]> = {};
    for (const { container, image } of images) {
      const where = specContainer(pod, container);
      if (!where) throw new AgentError('FailedPrecondition', `container "${container}" is no longer in the spec of pod ${ns}/${name}`);
      if (where.container.image === image) continue;
      (lists[where.init ? 'initContainers' : 'containers'] ??= []).push({ name: container, image });
    }
    if (Object.keys(lists).length === 0) return;
    const patched = await this.d.api.patchPod(ns, name, { spec: lists });
    // The answer is the pod as now written: remembered, so that a later check of the spec (putting the old image
    // back within FRESH_MS, say) never sees the pod from before this patch.
    this.d.cache.remember(ns, name, patched);
  }
}
