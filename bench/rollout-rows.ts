// The ways bench:rollout rolls one image change out to the same pods: in place through the agents (an
// InPlaceRollout on an OnDelete StatefulSet, or on a Deployment left on its RollingUpdate and held at admission),
// the stock StatefulSet RollingUpdate and a Deployment's rolling update (as users run them, and with the usual
// preStop sleep), and two StatefulSets rolled out in place at once. Each row says how its workloads are made.
import type { V1Deployment, V1PodTemplateSpec, V1StatefulSet } from '@kubernetes/client-node';
import { READY_CONDITION } from '../src/kube/ready-condition.js';
import { serverContainer } from '../test/support/traffic-fixture.js';

/** The label every pod of the bench carries, and the Service selects. */
export const APP = 'web';
/** The sidecar's script: exits 0 on SIGTERM. */
const SIDECAR = `trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`;

/** One row of the table. */
export interface Row {
  key: string;
  label: string;
  kind: 'StatefulSet' | 'Deployment';
  /** In place through an InPlaceRollout, with this budget. */
  inPlace?: { maxUnavailable: number | string };
  /** The zero-downtime recipe of the stock update: a preStop sleep, seconds. */
  preStopSleepSeconds?: number;
  /** Two workloads of N pods each (named APP and APP-b), rolled out at once, each by its own InPlaceRollout. */
  twin?: boolean;
  /**
   * What changes in the template: the app's image (default), or `kubectl rollout restart`'s annotation (every
   * container of every pod restarted with its own image).
   */
  change?: 'image' | 'restart';
}

/** Every row, in the order they run. */
export const ROWS: Row[] = [
  { key: 'a', label: 'in place, maxUnavailable 1', kind: 'StatefulSet', inPlace: { maxUnavailable: 1 } },
  { key: 'b', label: 'stock StatefulSet RollingUpdate', kind: 'StatefulSet' },
  { key: "b'", label: 'stock, preStop sleep 2 s', kind: 'StatefulSet', preStopSleepSeconds: 2 },
  { key: 'c', label: 'in place, maxUnavailable 3', kind: 'StatefulSet', inPlace: { maxUnavailable: 3 } },
  { key: 'd', label: 'stock Deployment, 25% surge', kind: 'Deployment' },
  { key: "d'", label: 'stock Deployment, 25% surge, preStop sleep 2 s', kind: 'Deployment', preStopSleepSeconds: 2 },
  { key: 'e', label: 'in place, maxUnavailable 25%', kind: 'StatefulSet', inPlace: { maxUnavailable: '25%' } },
  { key: 'f', label: 'Deployment in place, maxUnavailable 1', kind: 'Deployment', inPlace: { maxUnavailable: 1 } },
  { key: 'g', label: 'Deployment in place, maxUnavailable 25%', kind: 'Deployment', inPlace: { maxUnavailable: '25%' } },
  { key: 't', label: 'two StatefulSets in place at once, maxUnavailable 1 each', kind: 'StatefulSet', inPlace: { maxUnavailable: 1 }, twin: true },
  { key: 'r', label: 'Deployment in place, kubectl rollout restart (both containers)', kind: 'Deployment', inPlace: { maxUnavailable: 1 }, change: 'restart' },
];

/** The template patch of a row's change: the app's new image, or kubectl rollout restart's annotation. */
export function templateChange(row: Row, image: string): object {
  if (row.change === 'restart') return { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': new Date().toISOString() } } } } };
  return { spec: { template: { spec: { containers: [{ name: 'app', image }] } } } };
}

/** The names of a row's workloads (and of their rollouts). */
export function workloadNames(row: Row): string[] {
  return row.twin ? [APP, `${APP}-b`] : [APP];
}

/** The labels of one workload's pods: APP (the Service's selector) and the workload's name. */
export function podLabels(name: string): Record<string, string> {
  return { app: APP, workload: name };
}

/** The pod template of workload name: the HTTP server (the changed container) and a sidecar, spread over the given nodes. */
export function template(row: Row, name: string, image: string, sidecarImage: string, nodes: string[]): V1PodTemplateSpec {
  const app = serverContainer(image);
  return {
    metadata: { labels: podLabels(name) },
    spec: {
      terminationGracePeriodSeconds: 5,
      // The agents drain a pod through this condition before they stop its container.
      ...(row.inPlace ? { readinessGates: [{ conditionType: READY_CONDITION }] } : {}),
      // Only the cluster's real nodes: other tests register bare Node objects that run nothing.
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: nodes }] }] } } },
      topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { app: APP } } }],
      containers: [
        row.preStopSleepSeconds ? { ...app, lifecycle: { preStop: { sleep: { seconds: row.preStopSleepSeconds } } } } : app,
        { name: 'sidecar', image: sidecarImage, args: ['sh', '-c', SIDECAR] },
      ],
    },
  };
}

/** The StatefulSet of a row (OnDelete for the in-place rows, the stock RollingUpdate otherwise). */
export function statefulSet(row: Row, name: string, replicas: number, tpl: V1PodTemplateSpec): V1StatefulSet {
  return {
    metadata: { name },
    spec: {
      replicas,
      serviceName: APP,
      podManagementPolicy: 'Parallel',
      updateStrategy: row.inPlace ? { type: 'OnDelete' } : { type: 'RollingUpdate' },
      selector: { matchLabels: podLabels(name) },
      template: tpl,
    },
  };
}

/**
 * The Deployment of a row: the default rolling update, 25% surge and 25% unavailable (the in-place rows leave it
 * so too: the shipped admission policy holds it, and the InPlaceRollout's own budget applies).
 */
export function deployment(name: string, replicas: number, tpl: V1PodTemplateSpec): V1Deployment {
  return {
    metadata: { name },
    spec: { replicas, selector: { matchLabels: podLabels(name) }, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } }, template: tpl },
  };
}
