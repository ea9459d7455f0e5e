// From API objects to the planner's views (the one place that reads workload, revision, pod, ContainerRestart
// and ImagePrewarm fields for a rollout).
import type { V1ControllerRevision, V1Pod } from '../../k8s/client.js';
import type { ContainerRestart } from '../container-restart/types.js';
import type { PodView, RestartView, RevisionView, WorkloadView } from './plan.js';
import { REVISION_HASH_LABEL, TEMPLATE_GENERATION_LABEL } from './plan.js';
import type { Workload } from './rollout-api.js';
import type { PodTemplate } from './template-diff.js';
import { controlledBy } from '../kit/ownership.js';
import { DAEMONSET_HOLD_ANNOTATION, PARTITION_HOLD_ANNOTATION } from './workloads/hold.js';

/** Annotations on a rollout's ContainerRestart: the revision it takes its pod to. */
export const REVISION_HASH_ANNOTATION = 'inplace-agent.io/rollout-revision';
export const REVISION_NUMBER_ANNOTATION = 'inplace-agent.io/rollout-revision-number';
/** The annotation the API server keeps on a DaemonSet: its template generation. */
const DS_TEMPLATE_GENERATION = 'deprecated.daemonset.template.generation';

/** The workload as the planner sees it. */
export function workloadView(w: Workload): WorkloadView {
  const m = w.obj.metadata ?? {};
  const common = { name: m.name ?? '', uid: m.uid ?? '', generation: m.generation ?? 0, observedGeneration: w.obj.status?.observedGeneration ?? 0, updateStrategy: w.obj.spec?.updateStrategy?.type ?? 'RollingUpdate' };
  if (w.kind === 'StatefulSet') {
    const held = m.annotations?.[PARTITION_HOLD_ANNOTATION];
    const st = w.obj.status;
    return { kind: 'StatefulSet', ...common, desired: w.obj.spec?.replicas ?? 1, updateRevision: st?.updateRevision, currentRevision: st?.currentRevision, ...(held !== undefined ? { heldPartition: Number(held) || 0 } : {}) };
  }
  const tg = Number(m.annotations?.[DS_TEMPLATE_GENERATION] ?? m.generation ?? 0);
  // As JSON, the form a ControllerRevision's data has (a typed client object may hold Dates).
  const template = JSON.parse(JSON.stringify(w.obj.spec?.template ?? {})) as PodTemplate;
  const heldStrategy = m.annotations?.[DAEMONSET_HOLD_ANNOTATION];
  const st = w.obj.status;
  const atRest = st?.observedGeneration === m.generation && st?.updatedNumberScheduled === st?.desiredNumberScheduled;
  return { kind: 'DaemonSet', ...common, desired: st?.desiredNumberScheduled ?? 0, templateGeneration: tg, template, atRest, ...(heldStrategy !== undefined ? { heldStrategy } : {}) };
}

/** The selector's matchLabels (what pods and revisions are listed by). */
export function selectorOf(w: Workload): Record<string, string> {
  return w.obj.spec?.selector?.matchLabels ?? {};
}

/** The workload's ControllerRevisions. */
export function revisionViews(w: Workload, revisions: V1ControllerRevision[]): RevisionView[] {
  const uid = w.obj.metadata?.uid ?? '';
  return revisions
    .filter((r) => controlledBy(uid, r))
    .map((r) => {
      const data = (r.data ?? {}) as { spec?: { template?: PodTemplate & { $patch?: string } } };
      const { $patch: _, ...template } = data.spec?.template ?? {};
      const name = r.metadata?.name ?? '';
      return { name, hash: w.kind === 'StatefulSet' ? name : (r.metadata?.labels?.[REVISION_HASH_LABEL] ?? name), revision: Number(r.revision), template };
    });
}

/** The workload's pods (those it controls). */
export function podViews(w: Workload, pods: V1Pod[]): PodView[] {
  const uid = w.obj.metadata?.uid ?? '';
  return pods
    .filter((p) => controlledBy(uid, p))
    .map((p) => {
      const name = p.metadata?.name ?? '';
      const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
      const ord = w.kind === 'StatefulSet' ? name.match(/-(\d+)$/) : null;
      const terminal = p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
      return {
        name,
        uid: p.metadata?.uid ?? '',
        nodeName: p.spec?.nodeName,
        ordinal: ord ? Number(ord[1]) : undefined,
        revisionHash: p.metadata?.labels?.[REVISION_HASH_LABEL] ?? '',
        templateGeneration: p.metadata?.labels?.[TEMPLATE_GENERATION_LABEL],
        deleting: !!p.metadata?.deletionTimestamp || terminal,
        ready: ready?.status === 'True',
        readySinceMs: ready?.status === 'True' && ready.lastTransitionTime ? new Date(ready.lastTransitionTime).getTime() : undefined,
        containers: (p.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image ?? '' })),
        statuses: (p.status?.containerStatuses ?? []).map((c) => ({ name: c.name, image: c.image ?? '', ready: c.ready === true, ...(c.state?.running?.startedAt ? { startedAtMs: new Date(c.state.running.startedAt).getTime() } : {}) })),
        labels: p.metadata?.labels ?? {},
        annotations: p.metadata?.annotations ?? {},
      };
    });
}

/** The rollout's ContainerRestarts. */
export function restartViews(crs: ContainerRestart[]): RestartView[] {
  return crs.map((cr) => {
    const st = cr.status;
    const phase = st?.phase ?? 'Pending';
    const bad = st?.containers?.find((c) => c.exitCode !== undefined && c.exitCode !== 0) ?? st?.containers?.find((c) => c.message) ?? st?.containers?.find((c) => c.state !== 'Done');
    return {
      name: cr.metadata.name ?? '',
      pod: cr.spec.podName,
      revisionHash: cr.metadata.annotations?.[REVISION_HASH_ANNOTATION] ?? '',
      revisionNumber: Number(cr.metadata.annotations?.[REVISION_NUMBER_ANNOTATION] ?? -1),
      phase,
      containers: cr.spec.containers.map((c) => c.name),
      ...(cr.metadata.creationTimestamp ? { createdMs: new Date(cr.metadata.creationTimestamp).getTime() } : {}),
      ...(phase === 'Failed'
        ? { failure: { container: bad?.name, reason: `${st?.operationState ?? 'Failed'}: ${st?.message ?? bad?.message ?? 'failed'}`, ...(bad?.exitCode !== undefined ? { exitCode: bad.exitCode } : {}) } }
        : {}),
    };
  });
}

/** The pre-warm as the planner sees it: its status, or the nodes' own records over the nodes of the workload's pods (image-prewarm/summary.ts). */
export { prewarmProgress as prewarmView, progressFromRecords as prewarmFromRecords } from '../image-prewarm/summary.js';
