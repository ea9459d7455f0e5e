// Real byte progress of CRI pulls on containerd, read from containerd's own API while the unary CRI
// PullImage call runs.
//
// Every containerd client pull (CRI's included) runs under a lease of its own, and the blobs it writes are
// ingests held by that lease. So: starts of tracked pulls are serialised just long enough to see which new
// lease each one created (tens of ms), then that lease's ingests are matched with the content service's
// ListStatuses (offset/total per ingest) every intervalMs until the call ends. Two pulls running at once thus
// report their own bytes. A pull of something else that starts in the same few ms could be mistaken for
// ours; then the progress shown is that pull's, never an error.
import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { ProgressSource } from '../progress-source.js';
import { CRI_NAMESPACE, type PullProgress } from '../types.js';
import { ContainerdClient } from './client.js';
import { LeaseProgress } from './lease-progress.js';

/** Deadline of each call to containerd while a pull runs, ms. */
const CALL_TIMEOUT_MS = 5000;

/** Options of the containerd progress source. */
export interface ContainerdProgressOptions {
  /** containerd's socket (path or `unix://`), the same containerd that serves CRI. */
  address: string;
  /** containerd namespace CRI uses (default `k8s.io`). */
  namespace?: string;
  /** Poll interval while a pull runs, ms (default 300). */
  intervalMs?: number;
  /** How long to look for the lease of a pull that just started, ms (default 2000). */
  claimTimeoutMs?: number;
  clock?: Clock;
  logger?: Logger;
}

/** Progress of CRI pulls from containerd's leases and content ingests. */
export class ContainerdProgressSource implements ProgressSource {
  private readonly client: ContainerdClient;
  private readonly intervalMs: number;
  private readonly claimTimeoutMs: number;
  private readonly clock: Clock;
  private readonly claimed = new Set<string>();
  private startChain: Promise<void> = Promise.resolve();
  private warned = false;

  constructor(private readonly opts: ContainerdProgressOptions) {
    this.client = new ContainerdClient(opts.address, opts.namespace ?? CRI_NAMESPACE, CALL_TIMEOUT_MS);
    this.intervalMs = opts.intervalMs ?? 300;
    this.claimTimeoutMs = opts.claimTimeoutMs ?? 2000;
    this.clock = opts.clock ?? systemClock;
  }

  /** Runs the pull and reports its lease's progress while it runs. */
  async track<T>(ref: string, run: () => Promise<T>, onProgress: (p: PullProgress) => void): Promise<T> {
    let settled = false;
    let result!: Promise<T>;
    const ended = new AbortController();
    const unlock = await this.lock();
    let lease: string | undefined;
    try {
      const before = await this.leaseIds();
      result = run();
      void result.then(
        () => undefined,
        () => undefined,
      ).finally(() => {
        settled = true;
        ended.abort();
      });
      if (before) lease = await this.claim(before, () => settled, ended.signal);
    } finally {
      unlock();
    }
    if (lease) {
      this.opts.logger?.debug('tracking containerd pull', { image: ref, lease });
      void this.poll(lease, onProgress, () => settled, ended.signal).finally(() => this.claimed.delete(lease as string));
    }
    return result;
  }

  /** Closes the containerd connection. */
  close(): void {
    this.client.close();
  }

  private async lock(): Promise<() => void> {
    let unlock!: () => void;
    const mine = new Promise<void>((r) => (unlock = r));
    const prev = this.startChain;
    this.startChain = prev.then(() => mine);
    await prev;
    return unlock;
  }

  private async leaseIds(): Promise<Set<string> | undefined> {
    try {
      return new Set((await this.client.listLeases()).map((l) => l.id));
    } catch (err) {
      if (!this.warned) {
        this.warned = true;
        this.opts.logger?.warn('cannot read containerd leases: pulls report no byte progress', { error: (err as Error).message });
      }
      return undefined;
    }
  }

  /** The first lease that appeared since `before` and no other pull claimed. */
  private async claim(before: Set<string>, done: () => boolean, signal: AbortSignal): Promise<string | undefined> {
    const until = this.clock.now() + this.claimTimeoutMs;
    while (!done() && this.clock.now() < until) {
      try {
        const fresh = (await this.client.listLeases())
          .filter((l) => !before.has(l.id) && !this.claimed.has(l.id))
          .sort((a, b) => Number(a.createdAt?.seconds ?? 0) - Number(b.createdAt?.seconds ?? 0) || (a.createdAt?.nanos ?? 0) - (b.createdAt?.nanos ?? 0));
        if (fresh.length > 0) {
          this.claimed.add(fresh[0].id);
          return fresh[0].id;
        }
      } catch {
        return undefined;
      }
      try {
        await this.clock.sleep(20, signal);
      } catch {
        return undefined;
      }
    }
    return undefined;
  }

  private async poll(lease: string, onProgress: (p: PullProgress) => void, done: () => boolean, signal: AbortSignal): Promise<void> {
    const acc = new LeaseProgress();
    let last = '';
    while (!done()) {
      try {
        const [resources, statuses] = await Promise.all([this.client.leaseResources(lease), this.client.listStatuses()]);
        if (done()) return;
        const p = acc.update(resources, statuses);
        const key = `${p.bytesDone}/${p.bytesTotal}/${p.layers.length}/${p.extracting}`;
        if (key !== last) {
          last = key;
          onProgress(p);
        }
      } catch (err) {
        this.opts.logger?.debug('containerd progress poll failed', { lease, error: (err as Error).message });
      }
      try {
        await this.clock.sleep(this.intervalMs, signal);
      } catch {
        return;
      }
    }
  }
}
