// From API objects to the SidecarSet planner's views, and the ContainerRestart a planned upgrade becomes (the one
// place that reads pod and ContainerRestart fields for a SidecarSet).
import type { V1Pod } from '../../k8s/client.js';
import type { Requester } from '../../k8s/requester.js';
import { CR_GROUP, CR_KIND, CR_VERSION, type ContainerRestart } from '../container-restart/types.js';
import { IMAGES_LABEL, SIDECARSET_LABEL, setOwnerRef } from './ownership.js';
import { SidecarReasons, type SidecarPodView, type SidecarRestartAction, type SidecarRestartView } from './plan.js';
import type { SidecarSet } from './types.js';

/** A pod as the planner sees it. */
export function podView(p: V1Pod, namespaceLabels: Record<string, string>): SidecarPodView {
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    uid: p.metadata?.uid ?? '',
    ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
    labels: p.metadata?.labels ?? {},
    namespaceLabels,
    annotations: p.metadata?.annotations ?? {},
    containers: (p.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image ?? '' })),
    initContainers: (p.spec?.initContainers ?? []).map((c) => ({ name: c.name, image: c.image ?? '' })),
    // As JSON (the typed client's objects carry keys of undefined), as the SidecarSet's containers are read.
    specs: Object.fromEntries([...(p.spec?.containers ?? []), ...(p.spec?.initContainers ?? [])].map((c) => [c.name, JSON.parse(JSON.stringify(c)) as object])),
    ready: p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    deleting: !!p.metadata?.deletionTimestamp,
  };
}

/** A ContainerRestart of the SidecarSet as the planner sees it (the caller has checked that it is its own). */
export function restartView(cr: ContainerRestart): SidecarRestartView {
  const bad = cr.status?.containers?.find((c) => c.reason || c.exitCode !== undefined);
  const reason = bad?.reason ?? cr.status?.reason;
  return {
    name: cr.metadata.name ?? '',
    namespace: cr.metadata.namespace ?? '',
    podName: cr.spec.podName,
    imagesKey: cr.metadata.labels?.[IMAGES_LABEL] ?? '',
    phase: cr.status?.phase,
    ...(cr.status?.phase === 'Failed'
      ? { failure: { ...(bad ? { container: bad.name } : {}), reason: reason ?? SidecarReasons.restartFailed, ...(bad?.exitCode !== undefined ? { exitCode: bad.exitCode } : {}) } }
      : {}),
  };
}

/** The ContainerRestart of one pod's sidecar upgrade: the sidecars alone, owned by the SidecarSet, asked for by the agent itself. */
export function restartObject(set: SidecarSet, a: SidecarRestartAction, requester: Requester): ContainerRestart {
  const s = set.spec.updateStrategy ?? {};
  return {
    apiVersion: `${CR_GROUP}/${CR_VERSION}`,
    kind: CR_KIND,
    metadata: {
      name: a.name,
      namespace: a.namespace,
      labels: { [SIDECARSET_LABEL]: set.metadata.uid ?? '', [IMAGES_LABEL]: a.imagesKey },
      ownerReferences: [setOwnerRef(set)],
    } as ContainerRestart['metadata'],
    spec: {
      podName: a.pod,
      containers: a.containers,
      strategy: {
        // drain false: the app keeps serving while its sidecar restarts.
        ...(s.drain ? {} : { drainSeconds: 0 }),
        failurePolicy: set.spec.failurePolicy === 'Pause' ? 'Fail' : 'Rollback',
      },
      requester,
    },
  };
}
