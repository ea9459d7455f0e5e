// The kubelet strategy: a kubelet-managed container is restarted with the kubelet, never behind its back.
// The agent drains the pod, then either stops the container (same image: the kubelet starts the next
// instance) or patches its image in the pod spec (the kubelet recreates exactly that container), never both;
// then it verifies from the API server, and rolls a failed image change back. The pod is drained once for all
// the containers of an operation: each later container goes within the first one's drain (and the gate stays
// shut), and the gate opens after the last of them is verified (drain/pod-drain.ts). This file is the step machine
// (the steps are drawn in options.ts); claiming (claim.ts), the pod's condition and Events (report.ts), the
// side effects (pod-actions.ts) and verification (verify.ts) are the parts it drives.
//
// Every step is journaled before its side effect ("stop issued" is Stopping, "spec patched" is Patching).
// An agent restarted in the middle never runs a preStop hook twice (PreStop resumed goes straight to the
// stop), never stops twice (Stopping resumed stops only a container still running after its grace period),
// and finishes the operation.
import type { EventEmitter } from 'node:events';
import type { V1Container, V1Pod } from '../../k8s/client.js';
import { AgentError, asAgentError } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { ContainerTarget, Operation, RestartRequest } from '../../engine/operation.js';
import { Reasons } from '../../engine/reasons.js';
import { Unrecorded } from '../../engine/paused.js';
import type { PlannedTarget } from '../../engine/restart-plan.js';
import type { RestartStrategy, StepContext } from '../../engine/restart-strategy.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Pod } from '../../runtime/types.js';
import { ConditionWriter } from '../condition-writer.js';
import { DataPlane, DEFAULT_DRAIN_SETTLE_MS } from '../drain/data-plane.js';
import { Drainer } from '../drain/drainer.js';
import { polledSlices } from '../drain/slice-feed.js';
import { lastGroup, podDrainer } from '../drain/pod-drain.js';
import { closeForRollback, noteUndrained, openAtStart, opensAtStart, releaseDrain, wayBack, type WayBackDeps } from '../drain/way-back.js';
import { once, sightAll } from './runtime-sight.js';
import type { KubeApi } from '../../k8s/kube-api.js';
import type { PodEvents } from '../pod-events.js';
import { specContainer } from '../restart-policy.js';
import { KubeletClaims } from './claim.js';
import { KubeletSteps, kubeletOptions, type KubeletStep } from './steps.js';
import { PodActions } from './pod-actions.js';
import { PodCache } from './pod-cache.js';
import { splitName } from './pod-name.js';
import { RestartReport } from './report.js';
import { actStep, Together } from './together.js';
import { Verifier, VerifyFailed } from './verify.js';
import type { DrainMetrics } from '../drain-metrics.js';

/** With a watch of the node's pods, the pod is also read this often while verifying (in case an event is missed). */
const WATCHED_POLL_MS = 1000;

/** How far past the deadline the old image is still put back, ms: the container may be down meanwhile. */
const ROLLBACK_GRACE_MS = 60_000;

/** What the strategy needs. */
export interface KubeletStrategyDeps {
  api: KubeApi;
  runtime: Runtime;
  events: PodEvents;
  clock: Clock;
  log: Logger;
  /** How often the API server is read while verifying without a watch (default 200 ms). */
  pollMs?: number;
  /** This node's pods (NodePods): emits 'pod' (V1Pod) on every change; verifying then waits on it, not a timer. */
  pods?: Pick<EventEmitter, 'on' | 'off'>;
  /** This node's pods as that watch last saw them (NodePods.get): a claim takes the pod from there when it can. */
  watched?: (namespace: string, name: string) => V1Pod | undefined;
  /** Drains addresses (default: slices listed through api, and the settle time as the data plane's wait). */
  drainer?: Drainer;
  /** Where each part of a drain reports how long it took (inplace_drain_duration_seconds). */
  drainMetrics?: DrainMetrics;
  /** Containers of sandboxes no kubelet made go to the standalone strategy (default: refused; see ClaimDeps). */
  standalonePods?: boolean;
  /** Also record the Events the kubelet would not (Draining, Restarted): --pod-events all. Default false. */
  narrate?: boolean;
}

/** One call of advance(): what its steps share. */
interface Run {
  op: Operation;
  t: ContainerTarget;
  ctx: StepContext;
  ns: string;
  name: string;
  /** A same-image restart (a stop), not an image change (a patch). */
  same: boolean;
  /** Steps entered by this call, as opposed to steps read back from the journal after a restart. */
  entered: Set<string>;
  /** Enters a step, journaled before its side effect. */
  enter(s: KubeletStep): Promise<void>;
  /** The pod as last read or written. */
  pod: V1Pod;
  /** The container in the pod's spec. */
  spec: V1Container | undefined;
  /** What was held back for the first stop or patch (an ungated pod's announcement), if anything. */
  announce?: () => void;
  /** Writes that, once. */
  announced(): void;
}

/** Where a step leads: on to the next step (the one it entered), or to the container's end. */
type Outcome = 'next' | 'done' | 'failed';

/** Restarts kubelet-managed containers through the kubelet. */
export class KubeletStrategy implements RestartStrategy {
  readonly name = 'kubelet' as const;
  readonly steps = KubeletSteps;
  /** The kubelet recreates the container from the pod spec: the old one's config is never read. */
  readonly needsOldConfig = false;
  /** Every side effect follows a journaled step (Draining, PreStop, Stopping or Patching). */
  readonly journalsBeforeTouching = true;
  private readonly cache: PodCache;
  private readonly claims: KubeletClaims;
  private readonly report: RestartReport;
  private readonly actions: PodActions;
  private readonly verifier: Verifier;
  private readonly way: WayBackDeps;
  private readonly together: Together;

  constructor(
    private readonly d: KubeletStrategyDeps,
    conditions?: ConditionWriter,
  ) {
    const pollMs = d.pollMs ?? (d.pods ? WATCHED_POLL_MS : 200);
    this.cache = new PodCache(d.api, d.clock, d.log);
    this.claims = new KubeletClaims({ cache: this.cache, runtime: d.runtime, events: d.events, log: d.log, watched: d.watched, standalonePods: d.standalonePods });
    const writer = conditions ?? new ConditionWriter(d.api, d.clock, d.log);
    this.report = new RestartReport({ api: d.api, conditions: writer, events: d.events, log: d.log, narrate: d.narrate ?? false });
    const drainer = d.drainer ?? new Drainer(polledSlices(d.api, d.clock), new DataPlane(undefined, DEFAULT_DRAIN_SETTLE_MS, d.clock, d.log), d.clock);
    this.way = { drainer, conditions: writer, events: d.events, clock: d.clock };
    this.actions = new PodActions({ ...d, cache: this.cache, report: this.report, pollMs, way: this.way });
    this.together = new Together({ runtime: d.runtime, actions: this.actions, claims: this.claims, way: this.way });
    this.verifier = new Verifier({ cache: this.cache, events: d.events, clock: d.clock, log: d.log, pollMs, pods: d.pods });
  }

  claim(pod: Pod, target: PlannedTarget, req: RestartRequest): Promise<boolean> {
    return this.claims.claim(pod, target, req);
  }

  pulling(op: Operation, t: ContainerTarget, result: Promise<{ pulled: boolean }>): void {
    this.claims.pulling(op, t, result);
  }

  admitted(op: Operation, present?: (image: string) => Promise<boolean> | undefined): void {
    this.claims.admitted(op, present);
  }

  async advance(op: Operation, t: ContainerTarget, ctx: StepContext): Promise<boolean> {
    const r = await this.begin(op, t, ctx);
    try {
      for (;;) {
        const handler = this.table[t.step as KubeletStep] as ((r: Run) => Promise<Outcome>) | undefined;
        if (!handler) throw new AgentError('Internal', `container "${t.name}" is at step ${t.step}, which the kubelet strategy does not have`);
        const out = await handler(r);
        if (out !== 'next') return out === 'done';
      }
    } catch (err) {
      // Nothing was touched before the first record (the operation is abandoned, see Unrecorded).
      if (err instanceof Unrecorded) throw err;
      const e = asAgentError(err);
      this.d.log.warn('kubelet restart failed', { op: op.id, container: t.name, step: t.step, error: e.message });
      t.error = t.error ? `${t.error}; ${e.message}` : e.message;
      t.reason ??= e.reason ?? Reasons.ReplacementFailed;
      await ctx.step('Failed');
      return false;
    }
  }

  /** The step machine (the steps are drawn in steps.ts): what each step does, and which step it enters next. */
  private readonly table: Record<KubeletStep, (r: Run) => Promise<Outcome>> = {
    Waiting: (r) => this.waiting(r),
    Draining: (r) => this.draining(r),
    PreStop: (r) => this.preStop(r),
    Stopping: (r) => this.stopping(r),
    Stopped: (r) => r.enter('Verifying').then(() => 'next'),
    Patching: (r) => this.patching(r),
    Patched: (r) => r.enter('Verifying').then(() => 'next'),
    Verifying: (r) => this.verifying(r),
    Verified: (r) => this.verified(r),
    RollingBack: (r) => this.rollingBack(r),
    Done: () => Promise.resolve('done'),
    RolledBack: () => Promise.resolve('failed'),
    Failed: () => Promise.resolve('failed'),
  };

  /** What one call of advance() shares between its steps: the pod as read at its start, and the steps it entered. */
  private async begin(op: Operation, t: ContainerTarget, ctx: StepContext): Promise<Run> {
    const [ns, name] = splitName(op.podName);
    const entered = new Set<string>();
    const pod = await this.cache.fresh(ns, name, ctx.deadline);
    ctx.trace('pod at hand');
    const r: Run = {
      op,
      t,
      ctx,
      ns,
      name,
      same: t.newImage === t.oldImage,
      entered,
      // Stopping and Patching skip the directory fsync: off the path to the kubelet. A power loss that brings back
      // the record before them repeats an idempotent call (a stop of a stopped container, a patch to the same image).
      enter: async (s) => {
        entered.add(s);
        await ctx.step(s, { sync: s !== 'Stopping' && s !== 'Patching' });
      },
      pod,
      spec: specContainer(pod, t.name)?.container,
      announced: () => {
        r.announce?.();
        r.announce = undefined;
      },
    };
    return r;
  }

  /** (The executor checked that the old container runs.) */
  private async waiting(r: Run): Promise<Outcome> {
    // Journaled before the condition is written when the pod is drained; otherwise (no gate, or the pod drained
    // already for an earlier container of the operation: one drain a pod) with the next step.
    if (this.actions.drains(r.pod, r.op) && !podDrainer(r.op, this.name, r.t)) await r.enter('Draining');
    else r.ctx.mark('Draining');
    return 'next';
  }

  private async draining(r: Run): Promise<Outcome> {
    const { op, t, ctx } = r;
    if (this.actions.drains(r.pod, op)) {
      r.pod = await this.actions.drain(op, t, r.pod, ctx);
    } else {
      // Without a readiness gate there is nothing to drain: the condition and events that announce the restart
      // are written once the next journaled step's side effect is under way (the stop issued, the patch
      // answered), and nothing waits for them.
      const at = r.pod;
      noteUndrained(this.way, op, t, at, r.spec);
      r.announce = () => this.report.ungated(at, t);
    }
    // With `together`, the later containers go with this one: stopped or patched at once (together.ts).
    const companions = await this.together.companions(op, t);
    if (companions.length > 0) {
      await this.together.act(op, t, companions, r.pod, ctx, r.enter, r.announced);
      return 'next';
    }
    if (!r.same) {
      // The agent's Pulled (after a download of its own) is on record before the patch makes the kubelet
      // kill the old instance (written long since, unless the pull did not happen in this process).
      await r.enter('Patching');
      await this.claims.pulledRecorded(op, t, r.pod);
      ctx.trace('Pulled event on record');
    } else {
      await r.enter(actStep(op, t, r.pod));
    }
    return 'next';
  }

  private async preStop(r: Run): Promise<Outcome> {
    const { op, t } = r;
    r.announced();
    let grace = op.request.graceSeconds;
    if (r.entered.has('PreStop') && r.spec) {
      grace = await this.actions.preStop(op, t, r.pod, r.spec);
    } else {
      // The hook may have run before the agent restarted: it is never run twice.
      this.d.log.info('resuming after the preStop step: the hook is not run again', { op: op.id, container: t.name });
    }
    await r.enter('Stopping');
    await this.actions.stop(t, r.pod, grace, r.announced);
    r.ctx.mark('Stopped');
    return 'next';
  }

  private async stopping(r: Run): Promise<Outcome> {
    if (r.entered.has('Stopping')) await this.actions.stop(r.t, r.pod, r.op.request.graceSeconds, r.announced);
    else await this.actions.resumeStop(r.op, r.t, r.pod);
    r.ctx.mark('Stopped');
    return 'next';
  }

  private async patching(r: Run): Promise<Outcome> {
    // The announcement's writes (a status patch, Events) follow the patch's answer: sent with it, they would
    // queue at the API server beside it.
    await this.actions.patchImage(r.ns, r.name, r.t.name, r.t.newImage, r.ctx.deadline);
    r.announced();
    r.ctx.mark('Patched');
    return 'next';
  }

  private async verifying(r: Run): Promise<Outcome> {
    const { op, t, ctx, ns, name } = r;
    try {
      // With min-ready 0 the condition goes True as the new instance starts: the kubelet's Ready then follows the
      // readiness probe in one pod sync (way-back.ts, opensAtStart). The gate opens at the first sight of the new
      // instance: in the runtime (at once) or in the API server's status (after the kubelet's relist), whichever
      // comes first (runtime-sight.ts). Containers replaced together: once the new instances of all of them are seen.
      const group = opensAtStart(op, t, this.name) ? lastGroup(op, t, this.name) : [];
      const open = group.length > 0 ? once(() => openAtStart(this.way, op, t, ns, name, this.name)) : undefined;
      const sight = open && op.podId ? sightAll(this.d.runtime, this.d.clock, op.podId, group, () => (ctx.trace('new instances seen in the runtime'), open())) : undefined;
      const early = sight ? () => sight.seen(t.name) : group.length === 1 ? open : undefined;
      try {
        await this.verifier.verify(op, t, ctx, t.newImage, [t.oldId], ctx.deadline, false, early);
      } finally {
        sight?.stop();
      }
    } catch (err) {
      if (!(err instanceof VerifyFailed)) throw err;
      await this.closeEarly(op, t, ns, name, err.reason);
      t.error = err.message;
      t.reason = err.reason;
      if (err.exitCode !== undefined) t.exitCode = err.exitCode;
      if (!r.same && (err.cancelled || kubeletOptions(op.request).failurePolicy === 'Rollback')) {
        await r.enter('RollingBack');
        return 'next';
      }
      await ctx.step('Failed');
      return 'failed';
    }
    ctx.mark('Verified');
    return 'next';
  }

  private async verified(r: Run): Promise<Outcome> {
    await wayBack(this.way, r.op, r.t, r.ns, r.name, r.pod.status?.podIP ?? r.op.podIp ?? '', r.pod.metadata?.uid ?? '', this.name, r.ctx);
    r.ctx.mark('Done');
    return 'done';
  }

  private async rollingBack(r: Run): Promise<Outcome> {
    const { op, t, ctx } = r;
    // The old image is put back, and seen running, past the deadline too: the container may be down meanwhile.
    const until = Math.max(ctx.deadline, this.d.clock.now() + ROLLBACK_GRACE_MS);
    // (Read back from the journal: the condition may have been opened at the start before the agent restarted.)
    if (!r.entered.has('RollingBack')) await this.closeEarly(op, t, r.ns, r.name, t.reason ?? Reasons.ReplacementFailed);
    await this.actions.patchImage(r.ns, r.name, t.name, t.oldImage, until);
    try {
      const failedIds = [t.oldId, t.newId].filter((x) => x !== '');
      t.rollbackId = await this.verifier.verify(op, t, ctx, t.oldImage, failedIds, until, true);
    } catch (err) {
      t.reason = Reasons.RollbackFailed;
      t.error = `${t.error ?? 'the new image failed'}; ${Reasons.RollbackFailed}: ${asAgentError(err).message}`;
      await ctx.step('Failed');
      return 'failed';
    }
    await ctx.step('RolledBack');
    return 'failed';
  }

  /**
   * The new instance failed: a condition opened as it started goes False before anything else (the old image
   * put back, the operation's end). A write that fails is logged, and the rollback goes on regardless.
   */
  private async closeEarly(op: Operation, t: ContainerTarget, ns: string, name: string, why: string): Promise<void> {
    try {
      await closeForRollback(this.way, op, t, ns, name, this.name, why);
    } catch (err) {
      this.d.log.warn('cannot set the condition False again before the rollback', { op: op.id, container: t.name, error: asAgentError(err).message });
    }
  }

  /** Sets the condition and records events once the operation has ended. */
  async finished(op: Operation): Promise<void> {
    this.claims.forget(op);
    await releaseDrain(this.way, op);
    await this.report.finished(op);
  }

  /**
   * At start-up, writes the outcome of ended operations whose condition was left False (see
   * RestartReport.reconcile); `unfinished` says whether an operation on a pod is under way now.
   */
  reconcile(ops: Operation[], unfinished?: (podName: string) => boolean): Promise<void> {
    return this.report.reconcile(ops, unfinished);
  }
}
