// The settings of the fleet pre-warm on one node (fleet-agent.ts), and a real agent's defaults.

/** Settings of the fleet pre-warm (ms unless named otherwise). */
export interface FleetOptions {
  node: string;
  /** Namespace of the slot Leases. */
  leaseNamespace: string;
  leaseSeconds: number;
  pollMs: number;
  idleMs: number;
  seedGoneMs: number;
  backoffBaseMs: number;
  progressEveryMs: number;
  summaryEveryMs: number;
  targetsTtlMs: number;
  maxPollMs: number;
  /** After a 403 (the optional fleet RBAC is not installed): how long before the part tries again. */
  forbiddenRetryMs: number;
  /** Source of the polls' jitter, in [0, 1) (Math.random in an agent; tests give their own). */
  random: () => number;
}

/** Defaults for a real agent. */
export const FLEET_DEFAULTS: Omit<FleetOptions, 'node' | 'leaseNamespace'> = {
  leaseSeconds: 15,
  pollMs: 3_000,
  idleMs: 60_000,
  seedGoneMs: 120_000,
  backoffBaseMs: 10_000,
  progressEveryMs: 2_000,
  summaryEveryMs: 5_000,
  targetsTtlMs: 300_000,
  maxPollMs: 30_000,
  forbiddenRetryMs: 60_000,
  random: Math.random,
};
