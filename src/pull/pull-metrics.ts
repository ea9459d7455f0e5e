// Prometheus metrics of the pull service, registered in the registry the daemon passes in.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The pull service's metrics. */
export class PullMetrics {
  readonly pulls: Counter<'result'>;
  readonly duration: Histogram<'result'>;
  readonly bytes: Histogram;
  readonly inProgress: Gauge;
  readonly queueLength: Gauge;

  /** Registers the metrics in registry (a private one when none is given). */
  constructor(readonly registry: Registry = new Registry()) {
    const registers = [registry];
    this.pulls = new Counter({
      name: 'inplace_image_pulls_total',
      help: 'Image pulls by result: pulled, present (already there), failed, cancelled.',
      labelNames: ['result'],
      registers,
    });
    this.duration = new Histogram({
      name: 'inplace_image_pull_duration_seconds',
      help: 'Wall time of image pulls that reached the runtime, from leaving the queue to the end, by result.',
      labelNames: ['result'],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers,
    });
    this.bytes = new Histogram({
      name: 'inplace_image_pull_bytes',
      help: 'Bytes downloaded by successful image pulls (as the runtime reported them).',
      buckets: [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30, 4 * (1 << 30)],
      registers,
    });
    this.inProgress = new Gauge({ name: 'inplace_image_pulls_in_progress', help: 'Image pulls running in the runtime now.', registers });
    this.queueLength = new Gauge({ name: 'inplace_image_pull_queue_length', help: 'Image pulls waiting for a node-wide pull slot.', registers });
  }
}
