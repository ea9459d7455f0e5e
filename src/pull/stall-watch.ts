// The stall deadline of one pull attempt: fires when no new bytes arrived for stallMs, except while layers
// are being unpacked (no bytes are expected then), on an injected clock.
import type { Clock } from '../clock.js';
import type { PullProgress } from '../runtime/types.js';

/** Watches progress reports and calls onStall once when bytes stop coming. */
export class StallWatch {
  private lastBytes = -1;
  private lastLayers = -1;
  private lastChangeAt: number;
  private extracting = false;
  private readonly stop = new AbortController();

  /**
   * Starts watching; checkMs is how often the deadline is checked (default stallMs/4, ≤ 1 s). With armed
   * false the deadline starts only with the first progress report (for sources that may report nothing).
   */
  constructor(
    private readonly clock: Clock,
    private readonly stallMs: number,
    private readonly onStall: (idleMs: number) => void,
    checkMs?: number,
    private armed = true,
  ) {
    this.lastChangeAt = clock.now();
    void this.loop(checkMs ?? Math.max(10, Math.min(1000, Math.floor(stallMs / 4))));
  }

  /** Records a progress report: new bytes (or a new layer) restart the deadline; extracting holds it. */
  progress(p: PullProgress): void {
    this.armed = true;
    if (p.bytesDone > this.lastBytes || p.layers.length !== this.lastLayers || p.extracting !== this.extracting) {
      this.lastChangeAt = this.clock.now();
    }
    this.lastBytes = Math.max(this.lastBytes, p.bytesDone);
    this.lastLayers = p.layers.length;
    this.extracting = p.extracting;
  }

  /** Stops watching; onStall is not called after this. */
  close(): void {
    this.stop.abort();
  }

  private async loop(checkMs: number): Promise<void> {
    while (!this.stop.signal.aborted) {
      try {
        await this.clock.sleep(checkMs, this.stop.signal);
      } catch {
        return;
      }
      if (this.extracting || !this.armed) {
        this.lastChangeAt = this.clock.now();
        continue;
      }
      const idle = this.clock.now() - this.lastChangeAt;
      if (idle >= this.stallMs) {
        this.stop.abort();
        this.onStall(idle);
        return;
      }
    }
  }
}
