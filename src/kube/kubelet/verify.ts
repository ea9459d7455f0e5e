// Verification of a kubelet-made instance, from the API server: a new instance (an id not seen failing) of the
// container runs the wanted image for min-ready, and is Ready when it has a readiness probe. The kubelet's
// back-off is reported as it is seen; a crash or a create error fails at once, with its reason.
import type { EventEmitter } from 'node:events';
import type { V1Container, V1Pod } from '../../k8s/client.js';
import { AgentError } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { ContainerTarget, Operation } from '../../engine/operation.js';
import { Reasons } from '../../engine/reasons.js';
import type { StepContext } from '../../engine/restart-strategy.js';
import { retryDelay } from '../../engine/runtime-wait.js';
import { containerStatus, observe } from '../container-status.js';
import { EventReasons, type PodEvents } from '../pod-events.js';
import { specContainer } from '../restart-policy.js';
import type { PodCache } from './pod-cache.js';
import { splitName } from './pod-name.js';
import { imageMatches } from '../../image-ref.js';

/** Thrown by verification when the next instance failed; carries its reason and what the API server showed. */
export class VerifyFailed extends Error {
  constructor(
    /** A constant of reasons.ts. */
    readonly reason: string,
    message: string,
    readonly exitCode?: number,
  ) {
    super(`${reason}: ${message}`);
  }

  /** Ended by a cancel, not by the new instance: the old image goes back whatever the failure policy. */
  get cancelled(): boolean {
    return this.reason === Reasons.Cancelled;
  }
}

/** What verification needs. */
export interface VerifierDeps {
  cache: PodCache;
  events: PodEvents;
  clock: Clock;
  log: Logger;
  /** How often the pod is read while verifying (with a watch: besides each change it reports), ms. */
  pollMs: number;
  /** This node's pods (NodePods): emits 'pod' (V1Pod) on every change; verifying then waits on it, not a timer. */
  pods?: Pick<EventEmitter, 'on' | 'off'>;
}

/** Verifies new instances the kubelet made. */
export class Verifier {
  constructor(private readonly d: VerifierDeps) {}

  /**
   * Waits until a new instance (an id not in `notIds`) of the container runs `image`, for minReady, and is Ready
   * when it has a readiness probe, by `deadline` (epoch ms). Returns the new instance's id; throws VerifyFailed
   * when it failed. `started` is called once, when a new instance (of the new image) is first seen running.
   */
  async verify(op: Operation, t: ContainerTarget, ctx: StepContext, image: string, notIds: string[], deadline: number, rollingBack = false, started?: () => void): Promise<string> {
    const [ns, name] = splitName(op.podName);
    const issuedAt = Date.parse(t.steps.filter((s) => s.step === 'Stopping' || s.step === 'Patching' || s.step === 'RollingBack').at(-1)?.at ?? '') || this.d.clock.now();
    let seen: { id: string; since: number } | undefined;
    let reported = '';
    let unavailable = 0;
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
        if (t.newImage !== t.oldImage) throw new VerifyFailed(Reasons.Cancelled, `cancelled before a new instance of "${t.name}" ran; its old image ${t.oldImage} is put back`);
      }
      if (this.d.clock.now() > deadline) {
        throw new VerifyFailed(Reasons.Deadline, `no new instance of "${t.name}" (image ${image}) was verified before the ${rollingBack ? "rollback's" : "operation's"} deadline${t.waiting ? `; last seen: ${t.waiting}` : ''}`);
      }
      let pod: V1Pod;
      try {
        pod = await this.d.cache.read(ns, name);
        unavailable = 0;
      } catch (err) {
        if (!AgentError.is(err, 'Unavailable')) throw err;
        if (unavailable++ === 0) this.d.log.warn('API server unavailable while verifying; reading again', { op: op.id, error: (err as Error).message });
        await this.d.clock.sleep(retryDelay(unavailable));
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
            started?.();
          }
          t.waiting = undefined;
          ctx.publish();
          ctx.trace(`new instance running in the API status${rollingBack ? ' (rolling back)' : ''}`);
        }
        if (this.d.clock.now() - seen.since >= op.request.minReadyMs && (!hasReadinessProbe(spec) || obs.ready)) return obs.id;
      } else if (obs.kind === 'crashed' && !notIds.includes(obs.id) && !rollingBack) {
        t.newId = obs.id;
        throw new VerifyFailed(Reasons.ExitedEarly, `the new instance of "${t.name}" (image ${image}) ${obs.message}`, obs.exitCode);
      } else if (obs.kind === 'crashed' && seen && obs.id === seen.id) {
        throw new VerifyFailed(Reasons.ExitedEarly, `the new instance of "${t.name}" (image ${image}) ${obs.message}`, obs.exitCode);
      } else if (obs.kind === 'error') {
        throw new VerifyFailed(Reasons.StartFailed, `the kubelet cannot start "${t.name}" with image ${image}: ${obs.reason}: ${obs.message}`);
      } else if (obs.kind === 'backoff') {
        const note = `the kubelet holds the next start back${obs.until ? ` until ${obs.until.toISOString()}` : ''} (${obs.message})`;
        if (note !== reported) {
          reported = note;
          t.waiting = note;
          ctx.publish();
          this.d.log.warn('kubelet back-off seen', { op: op.id, container: t.name, until: obs.until?.toISOString(), message: obs.message });
          await this.d.events.record(pod, t.name, 'Warning', EventReasons.BackOff, `Back-off restarting container ${t.name}: next start ${obs.until ? `at ${obs.until.toISOString()}` : 'unknown'}`);
        }
        if (obs.until && obs.until.getTime() > deadline) {
          throw new VerifyFailed(Reasons.Deadline, `${note}, after the ${rollingBack ? "rollback's" : "operation's"} deadline ${new Date(deadline).toISOString()}`);
        }
      }
      const left = seen ? op.request.minReadyMs - (this.d.clock.now() - seen.since) : Infinity;
      await this.podChange(ns, name, Math.max(1, Math.min(this.d.pollMs, left)));
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

function hasReadinessProbe(c: V1Container | undefined): boolean {
  return Boolean(c?.readinessProbe);
}

