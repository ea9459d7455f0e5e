// Kubernetes mode, assembled: this node's pods watched, the readiness-gate condition kept, and the kubelet
// restart strategy the engine uses for kubelet-managed containers.
import { CoreV1Api, type KubeConfig } from '../k8s/client.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import { ConditionWriter } from './condition-writer.js';
import { DataPlane } from './drain/data-plane.js';
import { Drainer } from './drain/drainer.js';
import { KubeProxyMetrics } from './drain/kube-proxy-metrics.js';
import { watchedSlices } from './drain/slice-feed.js';
import type { DrainMetrics } from './drain-metrics.js';
import { ClientKubeApi, type KubeApi } from '../k8s/kube-api.js';
import { KubeletStrategy } from './kubelet/strategy.js';
import { followerDeps } from '../k8s/list-follower.js';
import { NodePods } from './node-pods.js';
import { PodEvents } from './pod-events.js';
import { ReadyGates } from './ready-gates.js';

/** The running parts of Kubernetes mode. */
export interface KubeMode {
  kc: KubeConfig;
  nodeName: string;
  api: KubeApi;
  pods: NodePods;
  events: PodEvents;
  strategy: KubeletStrategy;
  /** Starts watching this node's pods (waits for the first list, bounded). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** How restarts drain a pod (--proxy-metrics-url, --drain-settle), and which sandboxes they may name. */
export interface KubeModeSettings {
  /** kube-proxy's metrics address ('' : none, the settle time is used). */
  proxyMetricsUrl: string;
  settleMs: number;
  /** Sandboxes no kubelet made may be restarted (--container-restart-standalone-pods); default: refused. */
  standalonePods?: boolean;
  /** --pod-events: `all` adds the Events the kubelet would not record (Draining, Restarted); default `kubelet`. */
  podEvents?: 'kubelet' | 'all';
}

/** Builds Kubernetes mode for one node; drainMetrics receives the drain's parts. */
export function createKubeMode(kc: KubeConfig, nodeName: string, runtime: Runtime, clock: Clock, log: Logger, settings: KubeModeSettings, drainMetrics?: DrainMetrics): KubeMode {
  const api = new ClientKubeApi(kc);
  const klog = log.child({ component: 'kube' });
  const pods = new NodePods(kc.makeApiClient(CoreV1Api), nodeName, clock, klog, followerDeps(kc, clock));
  const events = new PodEvents(api, nodeName, clock, klog);
  // One writer of the condition, so that its writes to a pod land in the order they were made.
  const conditions = new ConditionWriter(api, clock, klog);
  const gates = new ReadyGates(conditions, klog);
  const dataPlane = new DataPlane(settings.proxyMetricsUrl ? new KubeProxyMetrics(settings.proxyMetricsUrl) : undefined, settings.settleMs, clock, klog);
  const drainer = new Drainer(watchedSlices(kc, clock, klog), dataPlane, clock);
  const strategy = new KubeletStrategy({ api, runtime, events, clock, log: klog, pods, watched: (ns, name) => pods.get(ns, name), drainer, drainMetrics, standalonePods: settings.standalonePods, narrate: settings.podEvents === 'all' }, conditions);
  pods.on('pod', (p) => gates.seen(p));
  return {
    kc,
    nodeName,
    api,
    pods,
    events,
    strategy,
    start: async () => {
      await pods.start();
      klog.info('Kubernetes mode: watching this node\'s pods', { node: nodeName, server: kc.getCurrentCluster()?.server, pods: pods.list().length });
    },
    stop: () => pods.stop(),
  };
}
