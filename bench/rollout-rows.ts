// The ways bench:rollout rolls one image change out to the same pods: in place through the agents (an
// InPlaceRollout on an OnDelete StatefulSet), the stock StatefulSet RollingUpdate (as users run it, and with the
// usual preStop sleep), and a Deployment's rolling update. Each row says how its workload is made.
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
}

/** Every row, in the order they run. */
export const ROWS: Row[] = [
  { key: 'a', label: 'in place, maxUnavailable 1', kind: 'StatefulSet', inPlace: { maxUnavailable: 1 } },
  { key: 'b', label: 'stock StatefulSet RollingUpdate', kind: 'StatefulSet' },
  { key: "b'", label: 'stock, preStop sleep 2 s', kind: 'StatefulSet', preStopSleepSeconds: 2 },
  { key: 'c', label: 'in place, maxUnavailable 3', kind: 'StatefulSet', inPlace: { maxUnavailable: 3 } },
  { key: 'd', label: 'Deployment, 25% surge', kind: 'Deployment' },
  { key: 'e', label: 'in place, maxUnavailable 25%', kind: 'StatefulSet', inPlace: { maxUnavailable: '25%' } },
];

/** The pod template: the HTTP server (the changed container) and a sidecar, spread over the given nodes. */
export function template(row: Row, image: string, sidecarImage: string, nodes: string[]): V1PodTemplateSpec {
  const app = serverContainer(image);
  return {
    metadata: { labels: { app: APP } },
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
export function statefulSet(row: Row, replicas: number, tpl: V1PodTemplateSpec): V1StatefulSet {
  return {
    metadata: { name: APP },
    spec: {
      replicas,
      serviceName: APP,
      podManagementPolicy: 'Parallel',
      updateStrategy: row.inPlace ? { type: 'OnDelete' } : { type: 'RollingUpdate' },
      selector: { matchLabels: { app: APP } },
      template: tpl,
    },
  };
}

/** The Deployment of row (d): the default rolling update, 25% surge and 25% unavailable. */
export function deployment(replicas: number, tpl: V1PodTemplateSpec): V1Deployment {
  return {
    metadata: { name: APP },
    spec: { replicas, selector: { matchLabels: { app: APP } }, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } }, template: tpl },
  };
}
