// Prometheus metrics of restart operations, derived from the engine's change events.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Engine } from '../engine/engine.js';
import { isTerminal, type Operation } from '../engine/operation.js';

/** Registers the operation metrics in registry and keeps them updated from engine. */
export function observeOperations(engine: Engine, registry: Registry): void {
  // reason: the failure's constant (engine/reasons.ts), the same word as every other output; '' on success.
  const finished = new Counter({ name: 'inplace_operations_total', help: 'Restart operations finished, by final state and reason', labelNames: ['state', 'reason'], registers: [registry] });
  const duration = new Histogram({
    name: 'inplace_operation_duration_seconds',
    help: 'Time from submission to the end of a restart operation',
    labelNames: ['state'],
    buckets: [0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  const downtime = new Histogram({
    name: 'inplace_container_downtime_seconds',
    help: 'Time between the old container stopping and its replacement starting',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [registry],
  });
  const active = new Gauge({ name: 'inplace_operations_active', help: 'Restart operations not yet finished', registers: [registry] });
  const live = new Set<string>();
  engine.on('change', (op: Operation) => {
    if (!isTerminal(op.state)) {
      live.add(op.id);
    } else if (live.delete(op.id)) {
      finished.inc({ state: op.state, reason: op.reason ?? '' });
      duration.observe({ state: op.state }, (Date.parse(op.finishedAt ?? op.updatedAt) - Date.parse(op.createdAt)) / 1000);
      for (const c of op.containers) if (c.downtimeMs !== undefined) downtime.observe(c.downtimeMs / 1000);
    }
    active.set(live.size);
  });
}
