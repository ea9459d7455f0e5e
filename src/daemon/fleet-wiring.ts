// Starts the fleet pre-warm when the agent runs in Kubernetes mode (a kubeconfig and a node name).
import type { KubeConfig } from '../k8s/client.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { FleetAgent, FLEET_DEFAULTS } from '../controllers/image-prewarm/fleet-agent.js';
import { KubeFleetApi } from '../controllers/image-prewarm/fleet-api.js';
import { NodeFleetPuller } from '../controllers/image-prewarm/fleet-puller.js';
import type { PrewarmMetrics } from '../controllers/image-prewarm/prewarm-metrics.js';
import { PrewarmPins } from '../controllers/image-prewarm/prewarm-pins.js';
import { SubjectAccessReviewer } from '../k8s/access-review.js';
import type { PullService } from '../pull/types.js';
import type { Runtime } from '../runtime/runtime.js';
import type { DaemonOptions } from './options.js';

/** The started fleet agent for this node, with the daemon's Kubernetes client configuration; undefined when it is turned off. */
export function startFleet(
  kc: KubeConfig,
  nodeName: string,
  opts: DaemonOptions,
  runtime: Runtime,
  pulls: PullService,
  clock: Clock,
  log: Logger,
  metrics?: PrewarmMetrics,
): FleetAgent | undefined {
  if (!opts.fleetPrewarm) return undefined;
  const pins = new PrewarmPins(runtime, opts.maxPinnedBytes, log.child({ component: 'fleet' }));
  const fleet = new FleetAgent(
    new KubeFleetApi(kc, clock),
    new NodeFleetPuller(runtime, pulls, pins),
    {
      ...FLEET_DEFAULTS,
      node: nodeName,
      leaseNamespace: opts.fleetNamespace,
      leaseSeconds: Math.ceil(opts.fleetLeaseMs / 1000),
      pollMs: opts.fleetPollMs,
      backoffBaseMs: opts.fleetBackoffMs,
      seedGoneMs: Math.max(opts.fleetLeaseMs * 4, 20_000),
    },
    clock,
    log.child({ component: 'fleet' }),
    metrics,
    // Each prewarm's creator is checked before a Secret it names is read (the admission policy may be missing).
    new SubjectAccessReviewer(kc),
    pins,
  );
  fleet.start();
  log.info('fleet pre-warm on: following ImagePrewarm objects', { node: nodeName, leaseNamespace: opts.fleetNamespace });
  return fleet;
}
