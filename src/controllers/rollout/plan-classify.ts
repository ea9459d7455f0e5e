// Classify, the planner's first stage: each pod of the target's scope, in update order, is updated, failed, in
// flight, not on a node, to relabel, or a candidate to start (in place, or by the fallback). Pure.
import { restartName } from './names.js';
import { diffTemplates, mapChanges } from './template-diff.js';
import { POD_TEMPLATE_ANNOTATION, REVISION_HASH_LABEL, TEMPLATE_GENERATION_LABEL } from './plan-types.js';
import type { CreateConflict, PodView, RestartView, RevisionView, RolloutAction, WorkloadView } from './plan-types.js';
import type { RolloutFailure } from './types.js';

/** A pod that may be started: the images its update sets, or (fallback) why it cannot be updated in place. */
export interface Candidate {
  pod: PodView;
  images: { name: string; image: string }[];
  fallback?: string;
}

/** One snapshot of the target's pods as classify reads it. */
export interface ClassifyInput {
  rolloutName: string;
  workload: WorkloadView;
  target: RevisionView;
  /** The revision each pod label names (plan.ts: the controller's own wins a tie, ignored ones are absent). */
  byHash: Map<string, RevisionView>;
  order: PodView[];
  inScope: Set<string>;
  /** This rollout's ContainerRestarts of the target revision, by pod. */
  restartOf: Map<string, RestartView>;
  conflictOf: Map<string, CreateConflict>;
}

/** The pods by class, each list in update order. */
export interface Classes {
  relabels: RolloutAction[];
  inFlight: Set<string>;
  failures: RolloutFailure[];
  /** The reason of the first failure when it is a create the rollout could not make. */
  conflictFirst?: string;
  candidates: Candidate[];
  unscheduled: string[];
  imagesToWarm: Set<string>;
}

/** Whether the stock controller counts the pod as of the target revision. */
export function isUpdated(w: WorkloadView, target: RevisionView, p: PodView): boolean {
  if (p.revisionHash === target.hash) return true;
  return w.kind === 'DaemonSet' && w.templateGeneration !== undefined && p.templateGeneration === String(w.templateGeneration);
}

/** The target's containers that name an image: what an updated pod runs. */
export function wantedContainers(target: RevisionView): { name: string; image?: string }[] {
  return (target.template.spec?.containers ?? []).filter((c) => c.image);
}

/** Each pod of the scope that is not updated, sorted into its class (see the table at the top of plan.ts). */
export function classifyPods(c: ClassifyInput): Classes {
  const out: Classes = { relabels: [], inFlight: new Set(), failures: [], candidates: [], unscheduled: [], imagesToWarm: new Set() };
  for (const p of c.order) {
    if (isUpdated(c.workload, c.target, p) || !c.inScope.has(p.name)) continue;
    classifyPod(c, p, out);
  }
  return out;
}

/** Puts one pod behind the target into its class in out. */
function classifyPod(c: ClassifyInput, p: PodView, out: Classes): void {
  const { workload: w, target } = c;
  const r = c.restartOf.get(p.name);
  if (r?.phase === 'Failed') {
    out.failures.push({ pod: p.name, container: r.failure?.container, reason: r.failure?.reason ?? 'failed', ...(r.failure?.exitCode !== undefined ? { exitCode: r.failure.exitCode } : {}) });
    return;
  }
  if (r && r.phase !== 'Succeeded') {
    out.inFlight.add(p.name);
    return;
  }
  // Not on a node (yet): no agent could update it. It stays behind, and unavailable, until it is scheduled.
  if (!p.nodeName) {
    out.unscheduled.push(p.name);
    return;
  }
  const from = c.byHash.get(p.revisionHash);
  const diff = from ? diffTemplates(from.template, target.template) : undefined;
  // A template annotation changed (kubectl rollout restart, Reloader): a Deployment's pod restarts every container in place.
  const restartAll = w.kind === 'Deployment' && r?.phase !== 'Succeeded' && Object.keys(diff?.annotations ?? {}).length > 0;
  const images = wantedContainers(target)
    .filter((x) => restartAll || p.containers.find((y) => y.name === x.name)?.image !== x.image)
    .map((x) => ({ name: x.name, image: x.image as string }));
  if (images.length === 0 && (diff ? diff.other.length === 0 : r?.phase === 'Succeeded')) {
    // Spec at the target: only the labels are left (the restart succeeded, or nothing but labels changed).
    out.inFlight.add(p.name);
    out.relabels.push({ kind: 'relabel', pod: p.name, podUid: p.uid, ...relabelling(w, target, p, diff) });
    return;
  }
  if (r?.phase === 'Succeeded') {
    out.failures.push({ pod: p.name, reason: `the pod's images changed after its update (${images.map((x) => x.name).join(', ')} no longer at the target)` });
    return;
  }
  const fallback = !from ? `its revision ${p.revisionHash || '(none)'} is no longer listed, so what changed is unknown` : diff && diff.other.length > 0 ? `${diff.other.join(', ')} changed` : undefined;
  const conflict = fallback ? undefined : c.conflictOf.get(restartName(c.rolloutName, p.name, target.revision));
  if (conflict) {
    // Never counted as started: the object under that name is not this rollout's update of the pod.
    out.failures.push({ pod: p.name, reason: `${conflict.reason}: ${conflict.message}` });
    if (out.failures.length === 1) out.conflictFirst = conflict.reason;
    return;
  }
  if (!fallback) for (const x of images) if (p.containers.find((y) => y.name === x.name)?.image !== x.image) out.imagesToWarm.add(x.image);
  out.candidates.push({ pod: p, images, fallback });
}

/** The pod patch that finishes an update: the new revision's labels, annotations and revision labels. */
function relabelling(w: WorkloadView, target: RevisionView, p: PodView, diff: ReturnType<typeof diffTemplates> | undefined): { labels: Record<string, string | null>; annotations: Record<string, string | null> } {
  const labels = { ...(diff?.labels ?? mapChanges({}, target.template.metadata?.labels)) };
  const annotations = { ...(diff?.annotations ?? {}) };
  if (w.marksPods) annotations[POD_TEMPLATE_ANNOTATION] = target.hash;
  else labels[REVISION_HASH_LABEL] = target.hash;
  if (w.kind === 'DaemonSet' && w.templateGeneration !== undefined) labels[TEMPLATE_GENERATION_LABEL] = String(w.templateGeneration);
  // Only what differs from the pod as it is.
  for (const [k, v] of Object.entries(labels)) if ((p.labels[k] ?? null) === v) delete labels[k];
  for (const [k, v] of Object.entries(annotations)) if ((p.annotations[k] ?? null) === v) delete annotations[k];
  return { labels, annotations };
}
