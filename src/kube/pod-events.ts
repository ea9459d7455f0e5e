// Events on a pod, in the kubelet's style: a fixed reason, a message naming the container and image, the
// container as fieldPath, and repeats of the same event folded into one (count and lastTimestamp), as the
// kubelet's event recorder does. Recording is best effort: a failure is logged, never fails a restart. The
// events of one pod are written one after another in the order they were recorded, so a caller need not wait
// for a write (a restart does not wait on its events) to keep them in order.
import { randomBytes } from 'node:crypto';
import type { CoreV1Event, V1Pod } from '../k8s/client.js';
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { KubeApi } from '../k8s/kube-api.js';

/**
 * Fixed reasons of Normal events. A Warning event about a failed restart carries the failure's own reason (a
 * constant of engine/reasons.ts, the same word as the operation, the ContainerRestart and the metrics).
 */
export const EventReasons = {
  Draining: 'Draining',
  Pulling: 'Pulling',
  Pulled: 'Pulled',
  Killing: 'Killing',
  Restarted: 'Restarted',
  BackOff: 'BackOff',
  RestartedUndrained: 'RestartedUndrained',
  /** The old instance's preStop hook failed (the kubelet's own reason for it); the stop goes on. */
  FailedPreStopHook: 'FailedPreStopHook',
} as const;

/** The component events are reported as. */
export const EVENT_COMPONENT = 'inplace-agent';

/** How long a folded event is remembered (the API server's default event TTL is one hour). */
const REMEMBER_MS = 50 * 60_000;

interface Seen {
  name: string;
  count: number;
  at: number;
}

/** Records events on pods, folding repeats. */
export class PodEvents {
  private readonly seen = new Map<string, Seen>();
  /** Per pod (namespace/name): the last write queued, which the next one follows. */
  private readonly tails = new Map<string, Promise<void>>();

  constructor(
    private readonly api: KubeApi,
    private readonly nodeName: string,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /**
   * Records one event (type Normal or Warning) about a container of a pod, after the pod's events recorded
   * before it; resolves when written or given up (never rejects).
   */
  record(pod: V1Pod, container: string | undefined, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const key = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
    // Stamped with the time it was recorded, not written: a queued write keeps its place in time.
    const at = this.clock.now();
    const next = (this.tails.get(key) ?? Promise.resolve()).then(() => this.write(pod, container, type, reason, message, at));
    this.tails.set(key, next);
    void next.then(() => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    });
    return next;
  }

  private async write(pod: V1Pod, container: string | undefined, type: 'Normal' | 'Warning', reason: string, message: string, now: number): Promise<void> {
    const ns = pod.metadata?.namespace ?? 'default';
    const uid = pod.metadata?.uid ?? '';
    const fieldPath = container ? `spec.containers{${container}}` : undefined;
    const key = [uid, fieldPath ?? '', type, reason, message].join('\u0000');
    const ts = new Date(now);
    this.forgetOld(now);
    try {
      const prev = this.seen.get(key);
      if (prev) {
        try {
          await this.api.patchEvent(ns, prev.name, { count: prev.count + 1, lastTimestamp: ts.toISOString() });
          prev.count++;
          prev.at = now;
          return;
        } catch (err) {
          if (!AgentError.is(err, 'NotFound')) throw err;
          this.seen.delete(key);
        }
      }
      const name = `${pod.metadata?.name ?? 'pod'}.${now.toString(16)}${randomBytes(3).toString('hex')}`;
      const event: CoreV1Event = {
        metadata: { name, namespace: ns },
        involvedObject: { kind: 'Pod', apiVersion: 'v1', namespace: ns, name: pod.metadata?.name, uid, resourceVersion: pod.metadata?.resourceVersion, fieldPath },
        reason,
        message,
        type,
        count: 1,
        firstTimestamp: ts,
        lastTimestamp: ts,
        source: { component: EVENT_COMPONENT, host: this.nodeName },
        reportingComponent: EVENT_COMPONENT,
        reportingInstance: this.nodeName,
      };
      await this.api.createEvent(ns, event);
      this.seen.set(key, { name, count: 1, at: now });
    } catch (err) {
      this.log.warn('cannot record an event', { pod: `${ns}/${pod.metadata?.name}`, reason, error: err instanceof Error ? err.message : String(err) });
    }
  }

  private forgetOld(now: number): void {
    for (const [k, v] of this.seen) if (now - v.at > REMEMBER_MS) this.seen.delete(k);
  }
}
