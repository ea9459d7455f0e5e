// This node's pods as the API server sees them: the follower (list-follower.ts) of `spec.nodeName=NODE`.
import { EventEmitter } from 'node:events';
import type { CoreV1Api, V1Pod } from '../k8s/client.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { Follower, type FollowerDeps } from '../k8s/list-follower.js';

/** First delay before the watch is started again after a failure, ms (doubling up to MAX_BACKOFF_MS). */
const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/** Emits 'pod' (V1Pod) for every pod added or changed. */
export class NodePods extends EventEmitter {
  private readonly follower: Follower<V1Pod>;

  constructor(
    core: Pick<CoreV1Api, 'listPodForAllNamespaces'>,
    readonly nodeName: string,
    private readonly clock: Clock,
    log: Logger,
    follow: FollowerDeps,
  ) {
    super();
    this.setMaxListeners(0);
    const fieldSelector = `spec.nodeName=${nodeName}`;
    const changed = (pod: V1Pod) => this.emit('pod', pod);
    this.follower = new Follower<V1Pod>(
      follow,
      { path: '/api/v1/pods', list: () => core.listPodForAllNamespaces({ fieldSelector }), fieldSelector, initialBackoffMs: INITIAL_BACKOFF_MS, maxBackoffMs: MAX_BACKOFF_MS },
      {
        add: changed,
        update: changed,
        failed: (f) => log.warn("watch of this node's pods failed; starting it again", { node: nodeName, failures: f.failures, retryInMs: f.retryInMs, error: f.error instanceof Error ? f.error.message : String(f.error) }),
      },
    );
  }

  /** Starts watching; returns once the first list is in, or after timeoutMs when the API server is not answering. */
  async start(timeoutMs = 10_000): Promise<void> {
    this.follower.start();
    const late = new AbortController();
    await Promise.race([this.follower.whenSynced(), this.clock.sleep(timeoutMs, late.signal).catch(() => undefined)]);
    late.abort();
  }

  /** The pod with this UID, when it is on this node. */
  byUid(uid: string): V1Pod | undefined {
    return this.follower.list().find((p) => p.metadata?.uid === uid);
  }

  /** The pod namespace/name, when it is on this node. */
  get(namespace: string, name: string): V1Pod | undefined {
    return this.follower.get(name, namespace);
  }

  /** Every pod of this node known so far. */
  list(): V1Pod[] {
    return this.follower.list();
  }

  /** Stops watching. */
  stop(): Promise<void> {
    return this.follower.stop();
  }
}
