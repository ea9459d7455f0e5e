// Keeps a list of images warm on the node on its own, before any rollout asks: the images named in a file
// are pulled (IfNotPresent) at start and again every interval, through the node's pull service (so its
// limits, retries, auth and metrics apply). The file is read again each round, so editing it is enough.
import fs from 'node:fs/promises';
import type { Clock } from '../clock.js';
import { asAgentError } from '../errors.js';
import type { Logger } from '../log.js';
import { parseImageRef } from '../image-ref.js';
import type { PullService } from '../pull/types.js';

/** What a prewarm round reads: one image reference per line; blank lines and `#` comments are skipped. */
export function parsePrewarmList(text: string, source: string): string[] {
  const images: string[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) return;
    try {
      parseImageRef(line);
    } catch (err) {
      throw new Error(`${source}:${i + 1}: ${asAgentError(err).message}`);
    }
    images.push(line);
  });
  return [...new Set(images)];
}

/** Options of the prewarmer. */
export interface PrewarmOptions {
  file: string;
  /** Time between rounds, ms; 0: one round at start. */
  intervalMs: number;
  /** Ask the runtime to protect the images from image GC. */
  pin: boolean;
}

/** Pulls the images of a list file now and every interval, until stopped. */
export class Prewarmer {
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly pulls: PullService,
    private readonly opts: PrewarmOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Starts the rounds in the background. */
  start(): void {
    this.loop ??= this.run();
  }

  /** One round: read the list, pull what is missing; resolves with how many images are warm. */
  async round(): Promise<number> {
    let images: string[];
    try {
      images = parsePrewarmList(await fs.readFile(this.opts.file, 'utf8'), this.opts.file);
    } catch (err) {
      this.log.error('prewarm list unreadable; this round is skipped', { file: this.opts.file, error: asAgentError(err).message });
      return 0;
    }
    if (images.length === 0) return 0;
    const started = this.clock.now();
    // One at a time: a restart's pull arriving meanwhile waits behind one prewarm pull, not the whole list.
    const results = await this.pulls.pull({ images, pin: this.opts.pin, parallel: 1 }, () => undefined, this.abort.signal);
    const failed = results.filter((r) => r.phase !== 'Done');
    for (const f of failed) this.log.warn('prewarm pull failed', { image: f.image, error: f.error, kind: f.errorKind });
    const warm = results.length - failed.length;
    this.log.info('prewarm round done', { images: results.length, warm, pulled: results.filter((r) => r.phase === 'Done' && !r.alreadyPresent).length, ms: this.clock.now() - started });
    return warm;
  }

  private async run(): Promise<void> {
    for (;;) {
      if (this.abort.signal.aborted) return;
      await this.round().catch((err: unknown) => this.log.error('prewarm round failed', { error: asAgentError(err).message }));
      if (this.opts.intervalMs <= 0) return;
      try {
        await this.clock.sleep(this.opts.intervalMs, this.abort.signal);
      } catch {
        return;
      }
    }
  }

  /** Stops the rounds; a pull under way is abandoned by this caller. */
  async stop(): Promise<void> {
    this.abort.abort(new Error('agent stopping'));
    await this.loop;
  }
}
