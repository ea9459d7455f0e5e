// Fakes for unit tests of the pull service's pure logic: a manual clock (manual-timers.ts), and a Runtime that
// implements only the image methods, with pulls the test finishes by hand. Integration tests use the real runtimes.
import { AgentError } from '../../src/errors.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Image, ImageFsUsage, PulledImage, PullOptions, PullProgress, RuntimeKind } from '../../src/runtime/types.js';

/** One pull the fake runtime is running. */
export interface FakePull {
  ref: string;
  opts: PullOptions;
  progress(p: Partial<PullProgress>): void;
  finish(result?: Partial<PulledImage>): void;
  fail(err: unknown): void;
}

/** Image methods of the fake a test can hold. */
export type HeldMethod = 'inspectImage' | 'listImages' | 'imageFsUsage';

/** A Runtime with an image store and pulls driven by the test; every other method throws. */
export class FakeRuntime {
  readonly images: Image[] = [];
  readonly pulls: FakePull[] = [];
  freeBytes = 100 * 1024 ** 3;
  pinned: string[] = [];
  /** When set, each pull ends at once with this (an error or a result). */
  autoFinish?: (ref: string, n: number) => Partial<PulledImage> | Error;
  private waiting: ((p: FakePull) => void)[] = [];
  private readonly held = new Map<HeldMethod, Promise<void>>();

  constructor(readonly kind: RuntimeKind = 'docker') {}

  /** The fake as the Runtime interface (only image methods work). */
  asRuntime(withPin = true): Runtime {
    const unsupported = () => {
      throw new AgentError('Internal', 'not in the fake');
    };
    return {
      kind: this.kind,
      capabilities: { restartsStopped: this.kind === 'docker', pullReportsProgress: this.kind === 'docker', maxContainerName: this.kind === 'docker' ? 253 : 63 },
      version: unsupported,
      listPods: unsupported,
      getPod: unsupported,
      listContainers: unsupported,
      inspectContainer: unsupported,
      containerState: unsupported,
      createContainer: unsupported,
      startContainer: unsupported,
      stopContainer: unsupported,
      removeContainer: unsupported,
      replacementName: unsupported,
      swapNames: unsupported,
      restoreNames: unsupported,
      exec: unsupported,
      events: unsupported,
      close: () => undefined,
      pullImage: (ref, opts) => this.pullImage(ref, opts),
      inspectImage: async (ref) => {
        await this.held.get('inspectImage');
        return this.images.find((i) => i.repoTags.includes(ref) || i.id === ref);
      },
      listImages: async () => {
        await this.held.get('listImages');
        return [...this.images];
      },
      imageFsUsage: async (): Promise<ImageFsUsage> => {
        await this.held.get('imageFsUsage');
        return { mountpoint: '/var/lib/fake', usedBytes: 1, availableBytes: this.freeBytes };
      },
      ...(withPin
        ? {
            pinImage: async (ref: string, pinned: boolean) => {
              if (pinned) this.pinned.push(ref);
              return true;
            },
          }
        : {}),
    };
  }

  /** Makes calls of method wait (those running and those to come) until the returned function is called. */
  hold(method: HeldMethod): () => void {
    let release!: () => void;
    this.held.set(method, new Promise<void>((r) => (release = r)));
    return () => {
      this.held.delete(method);
      release();
    };
  }

  /** Resolves with the next pull that starts (or one already started and not yet taken). */
  nextPull(): Promise<FakePull> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private pullImage(ref: string, opts: PullOptions = {}): Promise<PulledImage> {
    return new Promise<PulledImage>((resolve, reject) => {
      const n = this.pulls.length + 1;
      const pull: FakePull = {
        ref,
        opts,
        progress: (p) => opts.onProgress?.({ layers: [], bytesDone: 0, bytesTotal: 0, extracting: false, ...p }),
        finish: (result = {}) => {
          const id = result.id ?? `sha256:${'c'.repeat(63)}${n % 10}`;
          // Like a runtime, it stores what a digest reference names (a test may say otherwise).
          const digest = result.digest ?? (ref.includes('@') ? ref : `${ref.split(':')[0] === ref ? ref : ref.replace(/:[^/]*$/, '')}@sha256:${'d'.repeat(63)}${n % 10}`);
          this.images.push({ id, repoTags: ref.includes('@') ? [] : [ref], repoDigests: [digest], size: 1, pinned: false });
          resolve({ id, digest });
        },
        fail: reject,
      };
      opts.signal?.addEventListener('abort', () => reject(opts.signal?.reason), { once: true });
      this.pulls.push(pull);
      if (this.autoFinish) {
        const r = this.autoFinish(ref, n);
        if (r instanceof Error) reject(r);
        else pull.finish(r);
        return;
      }
      const w = this.waiting.shift();
      if (w) w(pull);
      else this.pending.push(pull);
    }).finally(() => undefined);
  }

  private readonly pending: FakePull[] = [];

  /** The next started pull not yet handed out, or waits for one. */
  async takePull(): Promise<FakePull> {
    const p = this.pending.shift();
    if (p) return p;
    return this.nextPull();
  }
}

export { memoryLogger } from './memory-logger.js';
export { flush, ManualClock } from './manual-timers.js';
