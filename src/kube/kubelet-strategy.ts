// The kubelet strategy: a kubelet-managed container is restarted with the kubelet, never behind its back.
// The agent drains the pod, then either stops the container (same image: the kubelet starts the next
// instance) or patches its image in the pod spec (the kubelet recreates exactly that container), never both;
// then it verifies from the API server, and rolls a failed image change back.
//
//   Waiting --> Draining --+--> PreStop --> Stopping --+--> Verifying --> Verified --> Done
//                          |   (same image)            |       |
//                          +--> Patching --------------+       +--> RollingBack --> RolledBack | Failed
//                              (new image)                     +--> Failed (same image, or policy Fail/Ignore)
//
// Every step is journaled before its side effect ("stop issued" is Stopping, "spec patched" is Patching).
// An agent restarted in the middle never runs a preStop hook twice (PreStop resumed goes straight to the
// stop), never stops twice (Stopping resumed stops only a container still running after its grace period),
// and finishes the operation.
import type { EventEmitter } from 'node:events';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { AgentError, asAgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { ContainerTarget, Operation, RestartRequest } from '../engine/operation.js';
import { remainingGrace, KUBELET_POD_UID_LABEL, type PlannedTarget } from '../engine/restart-plan.js';
import type { RestartStrategy, StepContext } from '../engine/restart-strategy.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Pod } from '../runtime/types.js';
import { Reasons } from '../engine/reasons.js';
import { ConditionWriter } from './condition-writer.js';
import { containerStatus, observe } from './container-status.js';
import { waitDrained } from './endpoint-drain.js';
import type { KubeApi } from './kube-api.js';
import { EventReasons, type PodEvents } from './pod-events.js';
import { checkPreStop, preStopHandler, runPreStop } from './pre-stop.js';
import { DrainParts, type DrainMetrics } from './drain-metrics.js';
import { ConditionReasons, gatesOnCondition, READY_CONDITION } from './ready-condition.js';
import { kubeletRefusal, specContainer } from './restart-policy.js';

/** Fixed reasons recorded on failures of this strategy. */
export const KubeletReasons = {
  Interrupted: 'ContainerChangedMeanwhile',
  Crashed: 'ReplacementExited',
  CreateFailed: 'KubeletCouldNotStart',
  Deadline: 'DeadlineExceeded',
  RollbackFailed: 'RollbackFailed',
} as const;

/** Default bound of the drain. */
export const DEFAULT_DRAIN_MS = 5000;

/** A pod this strategy read no longer ago than this is not read again before it is acted on. */
const FRESH_MS = 1000;

/** With a watch of the node's pods, the pod is also read this often while verifying (in case an event is missed). */
const WATCHED_POLL_MS = 1000;

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
  /** Where each part of a drain reports how long it took (inplace_drain_duration_seconds). */
  drainMetrics?: DrainMetrics;
}

/** Thrown inside verification when the next instance failed; carries what the API server showed. */
class VerifyFailed extends Error {
  constructor(
    message: string,
    readonly exitCode?: number,
    /** Ended by a cancel, not by the new instance: the old image goes back whatever the failure policy. */
    readonly cancelled = false,
  ) {
    super(message);
  }
}

/** Restarts kubelet-managed containers through the kubelet. */
export class KubeletStrategy implements RestartStrategy {
  readonly name = 'kubelet' as const;
  private readonly conditions: ConditionWriter;
  private readonly pollMs: number;
  /** The pods this strategy read last, by namespace/name, with when (planning reads the pod just before it runs). */
  private readonly recent = new Map<string, { pod: V1Pod; at: number }>();
  /** Per operation and container: its Pulling and Pulled events being recorded (the patch follows them). */
  private readonly pullingEvents = new Map<string, Promise<void>>();

  constructor(
    private readonly d: KubeletStrategyDeps,
    conditions?: ConditionWriter,
  ) {
    this.conditions = conditions ?? new ConditionWriter(d.api, d.clock, d.log);
    this.pollMs = d.pollMs ?? (d.pods ? WATCHED_POLL_MS : 200);
  }

  async claim(pod: Pod, target: PlannedTarget, req: RestartRequest): Promise<boolean> {
    const uid = target.current.labels[KUBELET_POD_UID_LABEL];
    if (!uid) return false;
    const [ns, name] = splitName(pod.name);
    let apiPod: V1Pod;
    try {
      apiPod = await this.read(ns, name);
    } catch (err) {
      if (!AgentError.is(err, 'NotFound')) throw err;
      throw new AgentError('FailedPrecondition', `pod ${pod.name} is managed by a kubelet but the API server does not know it; nothing was touched`);
    }
    if (apiPod.metadata?.uid !== uid) {
      throw new AgentError('FailedPrecondition', `pod ${pod.name} in the API server (uid ${apiPod.metadata?.uid}) is not the one on this node (uid ${uid}); nothing was touched`);
    }
    if (apiPod.metadata?.deletionTimestamp) throw new AgentError('FailedPrecondition', `pod ${pod.name} is being deleted; nothing was touched`);
    const spec = specContainer(apiPod, target.name);
    const same = !req.images[target.name] || req.images[target.name] === spec?.container.image;
    const refusal = kubeletRefusal(apiPod, target.name, same);
    if (refusal) throw new AgentError('FailedPrecondition', `${refusal}; nothing was touched`);
    if (!same && apiPod.metadata?.annotations?.['kubernetes.io/config.mirror']) {
      throw new AgentError('FailedPrecondition', `pod ${pod.name} is a static pod: its spec cannot be changed through the API server, so its image cannot be; nothing was touched`);
    }
    if (same && !req.skipPreStop && spec) checkPreStop(spec.container);
    // The runtime knows the image by the id the kubelet resolved; the pod spec's reference is the one to keep.
    if (spec) {
      target.current = { ...target.current, image: spec.container.image ?? target.current.image };
      target.newImage = req.images[target.name] ?? target.current.image;
    }
    return true;
  }

  /**
   * The Pulling event, kubelet style, as the executor begins making the new image present, and the Pulled event
   * once it is; the pull does not wait for them, the spec patch does. As the kubelet does, Pulling only when the
   * node does not have the image by that reference (then Pulled says it was already present).
   */
  pulling(op: Operation, t: ContainerTarget, result: Promise<{ pulled: boolean }>): void {
    const [ns, name] = splitName(op.podName);
    const cached = this.recent.get(`${ns}/${name}`)?.pod;
    const pod = cached ? Promise.resolve(cached) : this.read(ns, name);
    const present = this.d.runtime.inspectImage(t.newImage).then(
      (i) => i !== undefined,
      () => false, // unknown: the download is announced, as it may well happen
    );
    const done = Promise.all([pod, present]).then(
      async ([p, have]) => {
        const pulling = have ? Promise.resolve() : this.d.events.record(p, t.name, 'Normal', EventReasons.Pulling, `Pulling image "${t.newImage}"`);
        const got = await result.catch(() => undefined); // a failed pull fails the operation, with its own message
        if (got) await this.d.events.record(p, t.name, 'Normal', EventReasons.Pulled, pulledMessage(t.newImage, got.pulled));
        await pulling;
      },
      (err: unknown) => {
        this.d.log.warn('cannot record an event', { pod: op.podName, reason: EventReasons.Pulling, error: asAgentError(err).message });
      },
    );
    this.pullingEvents.set(`${op.id}/${t.name}`, done);
  }

  async advance(op: Operation, t: ContainerTarget, ctx: StepContext): Promise<boolean> {
    const [ns, name] = splitName(op.podName);
    const same = t.newImage === t.oldImage;
    // Steps entered by this call, as opposed to steps read back from the journal after a restart.
    const entered = new Set<string>();
    const enter = async (s: Parameters<StepContext['step']>[0]) => {
      entered.add(s);
      await ctx.step(s);
    };
    let pod = await this.freshPod(ns, name, ctx.deadline);
    const spec = specContainer(pod, t.name)?.container;
    // Without a readiness gate there is nothing to drain: the condition and events that announce the restart
    // are written once the next journaled step's side effect is under way, and nothing waits for them.
    let announce: (() => void) | undefined;
    const announced = () => {
      announce?.();
      announce = undefined;
    };
    try {
      for (;;) {
        switch (t.step) {
          case 'Waiting':
            if (!ctx.old || ctx.old.state !== 'running') {
              t.error = `${KubeletReasons.Interrupted}: container "${t.name}" (${t.oldId.slice(0, 12)}) is ${ctx.old ? ctx.old.state : 'gone'}; it was not touched`;
              await ctx.step('Failed');
              return false;
            }
            // Journaled before the condition is written when the pod is drained; otherwise with the next step.
            if (this.drains(pod, op)) await enter('Draining');
            else ctx.mark('Draining');
            break;
          case 'Draining': {
            const restarting = { status: 'False', reason: ConditionReasons.Restarting, message: `restarting container ${t.name}` } as const;
            if (this.drains(pod, op)) {
              pod = await this.drain(op, t, pod, ctx.deadline);
              // Written in order after Draining, but the stop or patch does not wait for it.
              this.conditions.post(ns, name, restarting, pod);
            } else {
              const at = pod;
              announce = () => {
                this.conditions.post(ns, name, { status: 'False', reason: ConditionReasons.Draining, message: `draining before restarting container ${t.name}` }, at);
                void this.d.events.record(at, t.name, 'Normal', EventReasons.Draining, `Restarting container ${t.name}; the pod does not gate its readiness on ${READY_CONDITION}, so it keeps receiving traffic`);
                this.conditions.post(ns, name, restarting, at);
              };
            }
            if (!same) {
              // Pulled is on record before the patch makes the kubelet kill the old instance (written long since,
              // unless the pull did not happen in this process: an operation resumed after it).
              const events = this.pullingEvents.get(`${op.id}/${t.name}`);
              this.pullingEvents.delete(`${op.id}/${t.name}`);
              await enter('Patching');
              if (events) await events;
              else await this.d.events.record(pod, t.name, 'Normal', EventReasons.Pulled, pulledMessage(t.newImage, op.pulls?.find((p) => p.image === t.newImage)?.pulled ?? false));
            } else {
              await enter(spec && !op.request.skipPreStop && preStopHandler(spec) ? 'PreStop' : 'Stopping');
            }
            break;
          }
          case 'PreStop': {
            announced();
            let grace = op.request.graceSeconds;
            if (entered.has('PreStop') && spec) {
              const began = this.d.clock.now();
              const res = await runPreStop(preStopHandler(spec)!, { container: spec, podIp: pod.status?.podIP ?? op.podIp, exec: (cmd, s) => this.d.runtime.exec(t.oldId, cmd, s), clock: this.d.clock }, op.request.graceSeconds * 1000);
              if (!res.ok) {
                this.d.log.warn('preStop hook failed', { op: op.id, container: t.name, reason: 'PreStopHookError', detail: res.detail });
                void this.d.events.record(pod, t.name, 'Warning', 'FailedPreStopHook', `PreStopHook failed for container ${t.name}: ${res.detail}`);
              }
              grace = remainingGrace(op.request.graceSeconds, this.d.clock.now() - began);
            } else {
              // The hook may have run before the agent restarted: it is never run twice.
              this.d.log.info('resuming after the preStop step: the hook is not run again', { op: op.id, container: t.name });
            }
            await enter('Stopping');
            await this.stop(op, t, pod, grace, announced);
            ctx.mark('Stopped');
            break;
          }
          case 'Stopping':
            if (entered.has('Stopping')) await this.stop(op, t, pod, op.request.graceSeconds, announced);
            else await this.resumeStop(op, t, pod);
            ctx.mark('Stopped');
            break;
          case 'Stopped':
            await enter('Verifying');
            break;
          case 'Patching': {
            const patching = this.patchImage(ns, name, t.name, t.newImage, ctx.deadline);
            announced();
            await patching;
            ctx.mark('Patched');
            break;
          }
          case 'Patched':
            await enter('Verifying');
            break;
          case 'Verifying':
            try {
              await this.verify(op, t, ctx, t.newImage, [t.oldId]);
            } catch (err) {
              if (!(err instanceof VerifyFailed)) throw err;
              t.error = err.message;
              if (err.exitCode !== undefined) t.exitCode = err.exitCode;
              if (err.cancelled) t.reason = Reasons.Cancelled;
              if (!same && (err.cancelled || (op.request.failurePolicy ?? 'Rollback') === 'Rollback')) {
                await enter('RollingBack');
                break;
              }
              await ctx.step('Failed');
              return false;
            }
            ctx.mark('Verified');
            break;
          case 'Verified':
            ctx.mark('Done');
            return true;
          case 'RollingBack': {
            // The old image is put back past the deadline too: the container may be down meanwhile.
            await this.patchImage(ns, name, t.name, t.oldImage, Math.max(ctx.deadline, this.d.clock.now() + 60_000));
            try {
              const failedIds = [t.oldId, t.newId].filter((x) => x !== '');
              t.rollbackId = await this.verify(op, t, ctx, t.oldImage, failedIds, true);
            } catch (err) {
              t.error = `${t.error ?? 'the new image failed'}; ${KubeletReasons.RollbackFailed}: ${asAgentError(err).message}`;
              await ctx.step('Failed');
              return false;
            }
            await ctx.step('RolledBack');
            return false;
          }
          case 'Done':
            return true;
          case 'RolledBack':
          case 'Failed':
            return false;
          default:
            throw new AgentError('Internal', `container "${t.name}" is at step ${t.step}, which the kubelet strategy does not have`);
        }
      }
    } catch (err) {
      const e = asAgentError(err);
      this.d.log.warn('kubelet restart failed', { op: op.id, container: t.name, step: t.step, error: e.message });
      t.error = t.error ? `${t.error}; ${e.message}` : e.message;
      await ctx.step('Failed');
      return false;
    }
  }

  /** Sets the condition and records events once the operation has ended. */
  async finished(op: Operation): Promise<void> {
    for (const c of op.containers) this.pullingEvents.delete(`${op.id}/${c.name}`);
    const mine = op.containers.filter((c) => c.strategy === this.name && c.steps.some((s) => s.step === 'Draining'));
    if (mine.length === 0) return; // nothing was touched: the condition was not changed either
    const [ns, name] = splitName(op.podName);
    const pod = await this.d.api.readPod(ns, name);
    const describe = (c: ContainerTarget) => `${c.name} (${c.oldImage === c.newImage ? c.newImage : `${c.oldImage} -> ${c.newImage}`}${c.downtimeMs !== undefined ? `, down ${c.downtimeMs} ms` : ''})`;
    if (op.state === 'Succeeded') {
      const msg = `restarted ${mine.map(describe).join(', ')}`;
      await this.conditions.set(ns, name, { status: 'True', reason: ConditionReasons.Restarted, message: msg });
      await this.d.events.record(pod, mine.length === 1 ? mine[0].name : undefined, 'Normal', EventReasons.Restarted, `Restarted container ${mine.map(describe).join(', ')}`);
      return;
    }
    const notRunning = mine.filter((c) => containerStatus(pod, c.name)?.state?.running === undefined);
    const rolledBack = mine.filter((c) => c.step === 'RolledBack' && c.rollbackId !== '');
    const why = op.error ?? 'the restart failed';
    if (notRunning.length > 0) {
      await this.conditions.set(ns, name, { status: 'False', reason: ConditionReasons.RestartFailed, message: `${notRunning.map((c) => c.name).join(', ')} not running: ${why}` });
      for (const c of notRunning) await this.d.events.record(pod, c.name, 'Warning', EventReasons.RestartFailed, `Restart of container ${c.name} (image ${c.newImage}) failed: ${c.error ?? why}`);
      return;
    }
    for (const c of rolledBack) await this.d.events.record(pod, c.name, 'Warning', EventReasons.RolledBack, `Rolled container ${c.name} back to image ${c.oldImage}: ${c.error ?? why}`);
    await this.conditions.set(ns, name, {
      status: 'True',
      reason: rolledBack.length > 0 ? ConditionReasons.RolledBack : ConditionReasons.Ready,
      message: rolledBack.length > 0 ? `rolled back ${rolledBack.map((c) => `${c.name} to ${c.oldImage}`).join(', ')}: ${why}` : `restart did not complete, every container runs: ${why}`,
    });
  }

  /**
   * At start-up: an agent that died between journaling an operation's end and writing the condition left it
   * False (Draining or Restarting). For each pod so left, with no unfinished operation, the last ended
   * operation's outcome is written again.
   */
  async reconcile(ops: Operation[]): Promise<void> {
    const byPod = new Map<string, Operation>();
    for (const op of [...ops].sort((a, b) => a.createdAt.localeCompare(b.createdAt))) {
      if (op.containers.some((c) => c.strategy === this.name)) byPod.set(op.podName, op);
    }
    for (const [podName, op] of byPod) {
      if (!op.finishedAt) continue;
      const [ns, name] = splitName(podName);
      const pod = await this.d.api.readPod(ns, name).catch(() => undefined);
      const cond = pod?.status?.conditions?.find((c) => c.type === READY_CONDITION);
      if (cond?.status !== 'False' || (cond.reason !== ConditionReasons.Draining && cond.reason !== ConditionReasons.Restarting)) continue;
      this.d.log.info('writing the outcome of an operation whose end the condition missed', { op: op.id, pod: podName, state: op.state });
      await this.finished(op);
    }
  }

  /** The pod from the API server, remembered as the latest read of it. */
  private async read(ns: string, name: string): Promise<V1Pod> {
    const pod = await this.d.api.readPod(ns, name);
    this.remember(ns, name, pod);
    return pod;
  }

  /** Keeps the pod as the latest seen of it (and drops entries older than FRESH_MS). */
  private remember(ns: string, name: string, pod: V1Pod): void {
    this.recent.set(`${ns}/${name}`, { pod, at: this.d.clock.now() });
    for (const [k, v] of this.recent) if (this.d.clock.now() - v.at > FRESH_MS) this.recent.delete(k);
  }

  /**
   * The pod as read within FRESH_MS (by the planning that just claimed the container), else from the API
   * server, tried again while the API server is away, up to the deadline.
   */
  private async freshPod(ns: string, name: string, deadline: number): Promise<V1Pod> {
    const r = this.recent.get(`${ns}/${name}`);
    if (r && this.d.clock.now() - r.at <= FRESH_MS) return r.pod;
    for (;;) {
      try {
        return await this.read(ns, name);
      } catch (err) {
        if (!AgentError.is(err, 'Unavailable') || this.d.clock.now() > deadline) throw err;
        await this.d.clock.sleep(500);
      }
    }
  }

  /** Whether the pod is drained before a restart: it gates its readiness on the condition, and has an address. */
  private drains(pod: V1Pod, op: Operation): boolean {
    return gatesOnCondition(pod) && (pod.status?.podIP ?? op.podIp ?? '') !== '';
  }

  /** Condition False (Draining), then waits until the pod's address left its slices (see drains()). */
  private async drain(op: Operation, t: ContainerTarget, pod: V1Pod, deadline: number): Promise<V1Pod> {
    const [ns, name] = splitName(op.podName);
    const ip = pod.status?.podIP ?? op.podIp ?? '';
    const written = await this.conditions.set(ns, name, { status: 'False', reason: ConditionReasons.Draining, message: `draining before restarting container ${t.name}` }, pod);
    void this.d.events.record(written, t.name, 'Normal', EventReasons.Draining, `Draining the pod's address from its EndpointSlices before restarting container ${t.name}`);
    const bound = Math.max(0, Math.min(op.request.drainMs ?? DEFAULT_DRAIN_MS, deadline - this.d.clock.now()));
    const res = await waitDrained(this.d.api, ns, ip, written.metadata?.uid ?? '', bound, this.d.clock);
    this.d.drainMetrics?.observe(DrainParts.Slices, res.waitedMs / 1000, res.drained);
    if (!res.drained) this.d.log.warn('drain bound reached; going on', { op: op.id, pod: op.podName, boundMs: bound, stillIn: res.left });
    else this.d.log.info('pod drained', { op: op.id, pod: op.podName, slices: res.slices, waitedMs: res.waitedMs });
    return written;
  }

  /** Stops the old instance; once the call is under way, announce() writes what was held back for it. */
  private async stop(op: Operation, t: ContainerTarget, pod: V1Pod, graceSeconds: number, announce?: () => void): Promise<void> {
    const stopping = this.d.runtime.stopContainer(t.oldId, graceSeconds);
    announce?.();
    void this.d.events.record(pod, t.name, 'Normal', EventReasons.Killing, `Stopping container ${t.name}`);
    await stopping;
  }

  /** Stopping read back from the journal: the stop was issued; stop only a container still running after its grace. */
  private async resumeStop(op: Operation, t: ContainerTarget, pod: V1Pod): Promise<void> {
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
      await this.d.clock.sleep(this.pollMs);
    }
    this.d.log.warn('the container still runs after its grace period: the stop the journal records did not happen; stopping it now', { op: op.id, container: t.name });
    await this.stop(op, t, pod, 2);
  }

  /** Strategic-merge patch of one container's image in the pod spec (idempotent). */
  private async patchImage(ns: string, name: string, container: string, image: string, deadline: number): Promise<void> {
    const pod = await this.freshPod(ns, name, deadline);
    const where = specContainer(pod, container);
    if (!where) throw new AgentError('FailedPrecondition', `container "${container}" is no longer in the spec of pod ${ns}/${name}`);
    if (where.container.image === image) return;
    const list = where.init ? 'initContainers' : 'containers';
    const patched = await this.d.api.patchPod(ns, name, { spec: { [list]: [{ name: container, image }] } });
    // The answer is the pod as now written: remembered, so that a later check of the spec (putting the old image
    // back within FRESH_MS, say) never sees the pod from before this patch.
    this.remember(ns, name, patched);
  }

  /**
   * Waits until a new instance (an id not in `notIds`) of the container runs `image`, for minReady, and is Ready
   * when it has a readiness probe. Reports a back-off as it is seen; fails at once on a crash or a create error.
   * Returns the new instance's id.
   */
  private async verify(op: Operation, t: ContainerTarget, ctx: StepContext, image: string, notIds: string[], rollingBack = false): Promise<string> {
    const [ns, name] = splitName(op.podName);
    const issuedAt = Date.parse(t.steps.filter((s) => s.step === 'Stopping' || s.step === 'Patching' || s.step === 'RollingBack').at(-1)?.at ?? '') || this.d.clock.now();
    let seen: { id: string; since: number } | undefined;
    let reported = '';
    for (;;) {
      // A cancel: a new instance running now is kept (the operation ends Cancelled and says so); before one runs,
      // an image change is undone by putting the old image back. A same-image restart has nothing to undo (the
      // kubelet starts the next instance either way), so it waits to see it running, then keeps it.
      if (op.cancelRequested && !rollingBack) {
        if (seen) {
          this.d.log.info('verification cut short by a cancel; the running new instance is kept', { op: op.id, container: t.name });
          ctx.cutShort();
          return seen.id;
        }
        if (t.newImage !== t.oldImage) {
          throw new VerifyFailed(`${Reasons.Cancelled}: cancelled before a new instance of "${t.name}" ran; its old image ${t.oldImage} is put back`, undefined, true);
        }
      }
      if (this.d.clock.now() > ctx.deadline) {
        throw new VerifyFailed(`${KubeletReasons.Deadline}: no new instance of "${t.name}" (image ${image}) was verified before the operation's deadline${t.waiting ? `; last seen: ${t.waiting}` : ''}`);
      }
      let pod: V1Pod;
      try {
        pod = await this.read(ns, name);
      } catch (err) {
        if (!AgentError.is(err, 'Unavailable')) throw err;
        this.d.log.warn('API server unavailable while verifying; reading again', { op: op.id, error: (err as Error).message });
        await this.d.clock.sleep(500);
        continue;
      }
      const status = containerStatus(pod, t.name);
      const obs = observe(status, notIds[0]);
      const spec = specContainer(pod, t.name)?.container;
      if (obs.kind === 'running' && notIds.includes(obs.id)) {
        // An instance already known to have failed came back (crash loop): not the one being verified.
      } else if (obs.kind === 'running' && (!rollingBack || imageMatches(status?.image ?? '', image) || !imageMatches(status?.image ?? '', t.newImage))) {
        // (Rolling back, an instance of the failed image may still run between its crashes: it is not the one.)
        if (!seen || seen.id !== obs.id) {
          seen = { id: obs.id, since: this.d.clock.now() };
          if (!rollingBack) {
            t.newId = obs.id;
            // Until the API server shows it running (startedAt has only whole seconds): an upper bound.
            t.downtimeMs = Math.max(0, this.d.clock.now() - issuedAt);
          }
          t.waiting = undefined;
          ctx.publish();
        }
        if (this.d.clock.now() - seen.since >= op.request.minReadyMs && (!hasReadinessProbe(spec) || obs.ready)) return obs.id;
      } else if (obs.kind === 'crashed' && !notIds.includes(obs.id) && !rollingBack) {
        t.newId = rollingBack ? t.newId : obs.id;
        throw new VerifyFailed(`${KubeletReasons.Crashed}: the new instance of "${t.name}" (image ${image}) ${obs.message}`, obs.exitCode);
      } else if (obs.kind === 'crashed' && seen && obs.id === seen.id) {
        throw new VerifyFailed(`${KubeletReasons.Crashed}: the new instance of "${t.name}" (image ${image}) ${obs.message}`, obs.exitCode);
      } else if (obs.kind === 'error') {
        throw new VerifyFailed(`${KubeletReasons.CreateFailed}: the kubelet cannot start "${t.name}" with image ${image}: ${obs.reason}: ${obs.message}`);
      } else if (obs.kind === 'backoff') {
        const note = `the kubelet holds the next start back${obs.until ? ` until ${obs.until.toISOString()}` : ''} (${obs.message})`;
        if (note !== reported) {
          reported = note;
          t.waiting = note;
          ctx.publish();
          this.d.log.warn('kubelet back-off seen', { op: op.id, container: t.name, until: obs.until?.toISOString(), message: obs.message });
          await this.d.events.record(pod, t.name, 'Warning', EventReasons.BackOff, `Back-off restarting container ${t.name}: next start ${obs.until ? `at ${obs.until.toISOString()}` : 'unknown'}`);
        }
        if (obs.until && obs.until.getTime() > ctx.deadline) {
          throw new VerifyFailed(`${KubeletReasons.Deadline}: ${note}, after the operation's deadline ${new Date(ctx.deadline).toISOString()}`);
        }
      }
      const left = seen ? op.request.minReadyMs - (this.d.clock.now() - seen.since) : Infinity;
      await this.podChange(ns, name, Math.max(1, Math.min(this.pollMs, left)));
    }
  }

  /** Resolves at the next change of the pod the watch reports, or after ms (without a watch: after ms). */
  private podChange(ns: string, name: string, ms: number): Promise<void> {
    const pods = this.d.pods;
    if (!pods) return this.d.clock.sleep(ms);
    return new Promise((resolve) => {
      const timer = new AbortController();
      const onPod = (p: V1Pod) => {
        if (p.metadata?.namespace === ns && p.metadata?.name === name) done();
      };
      const done = () => {
        pods.off('pod', onPod);
        timer.abort();
        resolve();
      };
      pods.on('pod', onPod);
      this.d.clock.sleep(ms, timer.signal).then(done, () => undefined);
    });
  }
}

/** The Pulled event's message, as the kubelet words it. */
function pulledMessage(image: string, pulled: boolean): string {
  return pulled ? `Successfully pulled image "${image}"` : `Container image "${image}" already present on machine`;
}

/** `namespace/name` split in two. */
function splitName(podName: string): [string, string] {
  const i = podName.indexOf('/');
  if (i < 0) throw new AgentError('FailedPrecondition', `pod "${podName}" has no namespace: it is not a Kubernetes pod`);
  return [podName.slice(0, i), podName.slice(i + 1)];
}

function hasReadinessProbe(c: V1Container | undefined): boolean {
  return Boolean(c?.readinessProbe);
}

/** Whether the image a status reports is the one asked for (the kubelet may report it normalized). */
export function imageMatches(reported: string, wanted: string): boolean {
  if (reported === wanted) return true;
  const norm = (s: string) => s.replace(/^docker\.io\/(library\/)?/, '');
  return norm(reported) === norm(wanted);
}
