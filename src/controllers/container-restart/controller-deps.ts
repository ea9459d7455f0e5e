// What the ContainerRestart controller (controller.ts) is built from.
import type { KubeConfig } from '../../k8s/client.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { Engine } from '../../engine/engine.js';
import type { RestartDefaults } from '../../engine/operation.js';
import type { AccessReviewer } from '../../k8s/access-review.js';
import type { ServiceAccountReader } from './requester-alive.js';
import type { AdmissionProbe } from './admission-as-requester.js';
import type { ContainerRestartApi } from './api.js';
import type { SelfPod } from './requester-check.js';
import type { FoundPod } from './pod-here.js';
import type { ContainerRestartMetrics } from './metrics.js';

/** What the controller is built from. */
export interface ContainerRestartControllerDeps {
  kc: KubeConfig;
  api: ContainerRestartApi;
  engine: Pick<Engine, 'restart' | 'has' | 'recorded' | 'get' | 'on' | 'off' | 'trace'>;
  /** This node's name, written to the status of every request it takes. */
  nodeName: string;
  /** This agent's identity, stable across its restarts (see agentIdentity): two agents never run one request. */
  agentId: string;
  /** Watch one namespace; all when undefined. */
  namespace?: string;
  defaults: RestartDefaults;
  /** The pod namespace/name when it is on this node (pod-here.ts); undefined when it is not. */
  findPod(namespace: string, name: string): Promise<FoundPod | undefined>;
  /** Whether a request may name a standalone sandbox, one no API server knows (default: refused, PodNotInApiServer). */
  standalonePods?: boolean;
  /** Where a ServiceAccount requester is looked up before the claim (requester-alive.ts). */
  accounts?: ServiceAccountReader;
  /** Where an image change is tried first as a dry run as the requester (admission-as-requester.ts). */
  admission?: AdmissionProbe;
  /** Subscribes to this node's pod watch (each pod added or changed); returns the unsubscribe. */
  onPod?(listener: (namespace: string, name: string) => void): () => void;
  /** Checks the recorded requester's own rights before a request is taken (requester-check.ts). */
  access: AccessReviewer;
  /** The agent's own pod, which no request may target. */
  selfPod?: SelfPod;
  clock: Clock;
  log: Logger;
  /** Where each request this agent took is reported once, when its status turns final. */
  metrics?: ContainerRestartMetrics;
}
