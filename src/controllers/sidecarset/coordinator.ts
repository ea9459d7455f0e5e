// The SidecarSet coordinator inside every agent of the DaemonSet. One agent at a time leads (k8s/lease-election.ts:
// the Lease `inplace-sidecarsets-slot-0`, held by node name and agent id) and plans every SidecarSet each round;
// the sidecar upgrades it starts are ContainerRestarts, which each node's agent runs as ever (the pod's image
// patched, so the kubelet recreates that container alone). Nothing is handed over: every round reads the cluster
// again (plan.ts).
import type { Clock } from '../../clock.js';
import { asAgentError } from '../../errors.js';
import { isConflict } from '../../k8s/api-error.js';
import type { Logger } from '../../log.js';
import { LeaseElection, type LeaseApi } from '../../k8s/lease-election.js';
import { reconcileSidecarSet } from './round.js';
import type { SidecarSetApi } from './sidecarset-api.js';

/** The election's name; its Lease (named as by earlier versions, so that both agree during an upgrade). */
export const SIDECAR_COORDINATION = 'inplace-sidecarsets';
export const SIDECAR_COORDINATION_LEASE = 'inplace-sidecarsets-slot-0';

/** Settings of the coordinator. */
export interface SidecarCoordinatorOptions {
  /** This agent's identity as the Lease holder (node name and agent id). */
  holder: string;
  leaseNamespace: string;
  leaseSeconds: number;
  /** How often a round runs while leading, and a follower looks at the Lease (ms). */
  roundMs: number;
}

/** Defaults for a real agent. */
export const SIDECAR_COORDINATOR_DEFAULTS = { leaseSeconds: 15, roundMs: 2000 };

/** Takes part in the election and, while holding the Lease, coordinates every SidecarSet. */
export class SidecarSetCoordinator {
  private readonly stopping = new AbortController();
  private readonly election: LeaseElection;
  private loop?: Promise<void>;
  private failing = false;

  constructor(
    private readonly api: SidecarSetApi,
    lease: LeaseApi,
    private readonly opts: SidecarCoordinatorOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.election = new LeaseElection(lease, { holder: opts.holder, leaseSeconds: opts.leaseSeconds, what: 'SidecarSets' }, clock, log);
  }

  /** Starts in the background. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Stops; gives the Lease back so that another agent takes over at once. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    await this.election.stop();
  }

  /** Whether this agent may act as the coordinator now. */
  leading(): boolean {
    return !this.stopping.signal.aborted && this.election.leading();
  }

  private async run(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      try {
        await this.election.elect();
        if (this.leading()) await this.round();
        if (this.failing) this.log.info('sidecarset coordination works again');
        this.failing = false;
      } catch (err) {
        // One line per streak of failures (no RBAC, no CRD, the API server away), not one per round.
        if (!this.failing) this.log.warn('sidecarset coordination round failed; trying again each round, quietly', { error: asAgentError(err).message });
        this.failing = true;
      }
      await this.clock.sleep(this.opts.roundMs, this.stopping.signal).catch(() => undefined);
    }
  }

  private async round(): Promise<void> {
    for (const set of await this.api.listSidecarSets()) {
      if (!this.leading()) return;
      try {
        await reconcileSidecarSet(this.api, set, this.clock.now(), () => this.leading(), this.log);
      } catch (err) {
        // A status write that lost a race (409) is done again next round, from a fresh read.
        this.log.log(isConflict(err) ? 'debug' : 'warn', 'sidecarset round failed; trying again', { sidecarset: set.metadata.name, error: asAgentError(err).message });
      }
    }
  }
}
