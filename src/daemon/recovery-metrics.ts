// Prometheus metrics of what start-up recovery found wrong: journal records set aside, orphaned containers.
import { Gauge, type Registry } from 'prom-client';
import type { Container } from '../runtime/types.js';

/** Callbacks for the engine's onCorruptRecord and onOrphans that keep the metrics in registry. */
export function recoveryMetrics(registry: Registry): {
  onCorruptRecord: (file: string) => void;
  onOrphans: (orphans: Container[]) => void;
} {
  const corrupt = new Gauge({
    name: 'inplace_journal_corrupt_records',
    help: 'Journal records set aside at start (moved to operations/corrupt/), by file name',
    labelNames: ['file'],
    registers: [registry],
  });
  const orphans = new Gauge({
    name: 'inplace_orphaned_containers',
    help: 'Containers labelled with an operation that no journal record explains, found at start (never started)',
    registers: [registry],
  });
  return {
    onCorruptRecord: (file) => corrupt.set({ file }, 1),
    onOrphans: (found) => orphans.set(found.length),
  };
}
