// This node's pods as the API server sees them: an informer (list, then watch) on `spec.nodeName=NODE`, kept
// alive by its own restart-with-backoff. The client's ListWatch re-lists by itself on 410 Gone; every other
// failure ends the watch, and this class starts it again after a growing delay.
import { EventEmitter } from 'node:events';
import { CoreV1Api, ListWatch, Watch, type KubeConfig, type V1Pod } from './client.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { Backoff } from '../pull/backoff.js';

/** Emits 'pod' (V1Pod) for every pod added or changed, and 'synced' after each full list. */
export class NodePods extends EventEmitter {
  private informer?: ListWatch<V1Pod>;
  private failures = 0;
  private restartTimer?: NodeJS.Timeout;
  private stopped = false;
  private readonly backoff: Backoff;

  constructor(
    private readonly kc: KubeConfig,
    readonly nodeName: string,
    private readonly clock: Clock,
    private readonly log: Logger,
    opts: { initialBackoffMs?: number; maxBackoffMs?: number } = {},
  ) {
    super();
    this.setMaxListeners(0);
    this.backoff = new Backoff(clock, { initialMs: opts.initialBackoffMs ?? 500, maxMs: opts.maxBackoffMs ?? 30_000 });
  }

  /** Starts watching; returns once the first list is in, or after timeoutMs when the API server is not answering. */
  async start(timeoutMs = 10_000): Promise<void> {
    const core = this.kc.makeApiClient(CoreV1Api);
    const fieldSelector = `spec.nodeName=${this.nodeName}`;
    const informer = new ListWatch<V1Pod>('/api/v1/pods', new Watch(this.kc), () => core.listPodForAllNamespaces({ fieldSelector }), false, undefined, fieldSelector);
    this.informer = informer;
    const changed = (pod: V1Pod) => {
      this.failures = 0;
      this.emit('pod', pod);
    };
    informer.on('add', changed);
    informer.on('update', changed);
    informer.on('error', (err: unknown) => this.restartLater(err));
    const first = new Promise<void>((resolve) => {
      this.once('synced', resolve);
      setTimeout(resolve, timeoutMs).unref();
    });
    this.run();
    await first;
  }

  /** The pod with this UID, when it is on this node. */
  byUid(uid: string): V1Pod | undefined {
    return this.informer?.list().find((p) => p.metadata?.uid === uid);
  }

  /** The pod namespace/name, when it is on this node. */
  get(namespace: string, name: string): V1Pod | undefined {
    return this.informer?.get(name, namespace);
  }

  /** Every pod of this node known so far. */
  list(): V1Pod[] {
    return [...(this.informer?.list() ?? [])];
  }

  /** Stops watching. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    await this.informer?.stop();
  }

  private run(): void {
    const informer = this.informer;
    if (!informer || this.stopped) return;
    informer.start().then(
      () => {
        // A failed list is reported through 'error' and ends start() normally: only a real start is a sync.
        if (this.stopped || this.restartTimer) return;
        this.emit('synced');
      },
      (err: unknown) => this.restartLater(err),
    );
  }

  private restartLater(err: unknown): void {
    if (this.stopped || this.restartTimer) return;
    this.failures++;
    const delay = this.backoff.delay(this.failures);
    this.log.warn('watch of this node\'s pods failed; starting it again', { node: this.nodeName, failures: this.failures, retryInMs: Math.round(delay), error: err instanceof Error ? err.message : String(err) });
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.informer?.stop().then(() => this.run());
    }, delay);
    this.restartTimer.unref();
  }
}
