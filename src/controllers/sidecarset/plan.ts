// The SidecarSet upgrade planner: a pure function of (SidecarSet, pods, ContainerRestarts, now). It remembers
// nothing; every round the coordinating agent reads the objects again and asks it what to start and what the
// status is, computed whole from that one snapshot.
//
//   pod not matched (selector, namespaceSelector) or being deleted                  -> not counted
//   matched, no injection annotation, a container named as a sidecar               -> conflict
//   matched, no injection annotation                                                 -> matched only (not injected)
//   injected, every sidecar container on the SidecarSet's image                      -> updated (ready if the pod is)
//   injected, its ContainerRestart of this SidecarSet running                        -> in flight
//   injected, its ContainerRestart for these images failed                           -> failure: no new upgrade starts
//   injected, the name of its ContainerRestart held by an object not the SidecarSet's -> not started, the status says
//     NameTaken naming the object (conflicts, from the coordinator's create); the other pods go on
//   injected, a sidecar differing from the SidecarSet's spec beyond its image (or missing) -> counted in olderSpecPods
//     (only images change in place: the rest reaches new pods, spec-drift.ts)
//   injected, a sidecar container or native sidecar (restartable initContainer) on
//     another image, within maxUnavailable, not paused, not held by partition,
//     selected by updateStrategy.selector                                            -> start a ContainerRestart
//   ... but with updateStrategy.prewarm, before the first ContainerRestart of an image set: one ImagePrewarm per
//     namespace of those pods, and no restart until each is done (prewarm.ts)
// A native sidecar is upgraded as a container is: the kubelet recreates a restartable init container alone when
// its image in spec.initContainers changes (checked on 1.36, docs/sidecars.md).
import { createHash } from 'node:crypto';
import type { CreateConflict } from '../kit/create-or-taken.js';
import { inPartition, resolveMaxUnavailable } from '../kit/budget.js';
import { digestName } from '../kit/names.js';
import { KitReasons } from '../kit/reasons.js';
import { selectorMatches } from './selector.js';
import { injectedAnnotation, type SidecarFailure, type SidecarSet, type SidecarSetStatus } from './types.js';
import { keepTransition } from '../../k8s/conditions.js';
import { differsBeyondImage } from './spec-drift.js';
import { prewarmGate, type PrewarmGate, type SidecarPrewarmAction, type SidecarPrewarmView } from './prewarm.js';

/** Reasons of the status's Updated condition. */
export const SidecarReasons = {
  complete: 'Complete',
  updating: 'Updating',
  paused: 'Paused',
  failed: 'UpgradeFailed',
  partitioned: 'Partitioned',
  /** A failure whose ContainerRestart gave no reason of its own. */
  restartFailed: 'ContainerRestartFailed',
  /** updateStrategy.prewarm: the new images are being pulled on the pods' nodes; no restart yet. */
  prewarming: KitReasons.prewarming,
  /** A node could not pull them: the upgrade stops before any pod. */
  prewarmFailed: KitReasons.prewarmFailed,
  /**
   * An ImagePrewarm of the SidecarSet's name is not its own (the upgrade stops before any pod), or a pod's
   * ContainerRestart name is held by an object not its own (that pod waits; the others go on).
   */
  nameTaken: KitReasons.nameTaken,
} as const;

/** The condition type a SidecarSet carries: every injected pod runs its current sidecar images. */
export const UPDATED = 'Updated';

/** A pod as the planner needs it. */
export interface SidecarPodView {
  namespace: string;
  name: string;
  uid: string;
  nodeName?: string;
  labels: Record<string, string>;
  /** Its namespace's labels (for namespaceSelector). */
  namespaceLabels: Record<string, string>;
  annotations: Record<string, string>;
  /** spec.containers: name and image. */
  containers: { name: string; image: string }[];
  /** spec.initContainers: name and image. */
  initContainers: { name: string; image: string }[];
  /** Each container's and init container's whole spec as the API server holds it, by name (for olderSpecPods). */
  specs?: Record<string, object>;
  ready: boolean;
  deleting: boolean;
}

/** A ContainerRestart of this SidecarSet as the planner needs it. */
export interface SidecarRestartView {
  name: string;
  namespace: string;
  podName: string;
  /** The images it was created for (imagesKey of the SidecarSet at the time). */
  imagesKey: string;
  phase?: string;
  failure?: { container?: string; reason: string; exitCode?: number };
}

/** A ContainerRestart to create: the pod's sidecar containers to their new images, the app's untouched. */
export interface SidecarRestartAction {
  name: string;
  namespace: string;
  pod: string;
  containers: { name: string; image: string }[];
  imagesKey: string;
}

/** What the planner says. */
export interface SidecarPlan {
  actions: SidecarRestartAction[];
  /** ImagePrewarms to create. */
  prewarms: SidecarPrewarmAction[];
  /** The names of the ImagePrewarms this round needs: the SidecarSet's others are deleted. */
  keepPrewarms: string[];
  status: SidecarSetStatus;
}

/** What the planner reads. */
export interface SidecarPlanInput {
  set: SidecarSet;
  pods: SidecarPodView[];
  /** The SidecarSet's own ContainerRestarts (by owner, ownership.ts): nothing else is counted. */
  restarts: SidecarRestartView[];
  /** The ImagePrewarms seen under the SidecarSet's names, by name. */
  prewarms?: ReadonlyMap<string, SidecarPrewarmView>;
  /** ContainerRestarts the coordinator could not create (NameTaken, CreateRefused), still backing off. */
  conflicts?: CreateConflict[];
  nowMs: number;
}

const finished = (phase: string | undefined) => phase === 'Succeeded' || phase === 'Failed';
const podKey = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;

/** A short key of the SidecarSet's sidecar images (containers and native sidecars): the ContainerRestarts of one image set share it. */
export function imagesKey(set: SidecarSet): string {
  const images = [...(set.spec.containers ?? []), ...(set.spec.initContainers ?? [])].map((c) => `${c.name}=${c.image ?? ''}`).sort();
  return createHash('sha256').update(images.join('\n')).digest('hex').slice(0, 10);
}

/** The ContainerRestart name for one pod and image set (SET-POD-DIGEST, kit/names.ts): one per pod update, never two. */
export function restartName(set: SidecarSet, pod: { name: string; uid: string }, key: string): string {
  return digestName(`${set.metadata.name}-${pod.name}`, [set.metadata.uid ?? '', pod.uid, key]);
}

/** Whether the SidecarSet's selectors match the pod. */
export function podMatched(set: SidecarSet, p: SidecarPodView): boolean {
  return selectorMatches(set.spec.selector, p.labels) && (!set.spec.namespaceSelector || selectorMatches(set.spec.namespaceSelector, p.namespaceLabels));
}

/** The pods of one snapshot, sorted into what the table at the top of this file says. */
interface Classified {
  key: string;
  wanted: Map<string, string>;
  matched: SidecarPodView[];
  injected: SidecarPodView[];
  conflicts: SidecarPodView[];
  inFlight: SidecarPodView[];
  updated: SidecarPodView[];
  olderSpec: SidecarPodView[];
  failures: SidecarFailure[];
  /** Pods whose ContainerRestart name is taken, with the conflict. */
  taken: { pod: SidecarPodView; conflict: CreateConflict }[];
  /** The sidecars of a pod on another image than the SidecarSet's. */
  stale: (p: SidecarPodView) => { name: string; image: string }[];
  byPod: Map<string, SidecarRestartView[]>;
}

function classify(input: SidecarPlanInput): Classified {
  const { set } = input;
  const key = imagesKey(set);
  // Names are unique across containers and initContainers (the CRD says so): one map of wanted images.
  const sidecarSpecs = [...(set.spec.containers ?? []), ...(set.spec.initContainers ?? [])];
  const wanted = new Map(sidecarSpecs.map((c) => [c.name, c.image ?? '']));
  const annotation = injectedAnnotation(set.metadata.name);
  const matched = input.pods.filter((p) => !p.deleting && podMatched(set, p)).sort((a, b) => podKey(a).localeCompare(podKey(b)));
  const injected = matched.filter((p) => p.annotations[annotation] !== undefined);
  const conflicts = matched.filter((p) => p.annotations[annotation] === undefined && [...p.containers, ...p.initContainers].some((c) => wanted.has(c.name)));
  const byPod = new Map<string, SidecarRestartView[]>();
  for (const r of input.restarts) byPod.set(`${r.namespace}/${r.podName}`, [...(byPod.get(`${r.namespace}/${r.podName}`) ?? []), r]);
  const inFlight = injected.filter((p) => (byPod.get(podKey(p)) ?? []).some((r) => !finished(r.phase)));
  const inFlightKeys = new Set(inFlight.map(podKey));
  const stale = (p: SidecarPodView) => [...p.initContainers, ...p.containers].filter((c) => wanted.has(c.name) && wanted.get(c.name) !== c.image);
  const updated = injected.filter((p) => !inFlightKeys.has(podKey(p)) && stale(p).length === 0);
  const olderSpec = injected.filter((p) => p.specs && sidecarSpecs.some((c) => !p.specs?.[c.name] || differsBeyondImage(c, p.specs[c.name] as object)));
  const failures: SidecarFailure[] = [];
  for (const p of injected) {
    for (const r of byPod.get(podKey(p)) ?? []) {
      if (r.imagesKey === key && r.phase === 'Failed') failures.push({ pod: podKey(p), ...(r.failure ?? { reason: SidecarReasons.restartFailed }) });
    }
  }
  const conflictOf = new Map((input.conflicts ?? []).filter((c) => c.kind === 'ContainerRestart').map((c) => [c.name, c]));
  const taken = injected.flatMap((pod) => {
    const conflict = stale(pod).length > 0 && !inFlightKeys.has(podKey(pod)) ? conflictOf.get(restartName(set, pod, key)) : undefined;
    return conflict ? [{ pod, conflict }] : [];
  });
  return { key, wanted, matched, injected, conflicts, inFlight, updated, olderSpec, failures, taken, stale, byPod };
}

/** The ContainerRestarts to create now: within maxUnavailable, not paused, not held by partition or a taken name. */
function restartActions(set: SidecarSet, c: Classified, go: boolean): { candidates: SidecarPodView[]; actions: SidecarRestartAction[]; held: Set<string> } {
  const strategy = set.spec.updateStrategy ?? {};
  // The last `partition` injected pods (namespace/name order) keep the older sidecars.
  const held = new Set(c.injected.map(podKey));
  for (const p of inPartition(c.injected, strategy.partition)) held.delete(podKey(p));
  const unavailable = new Set([...c.inFlight.map(podKey), ...c.matched.filter((p) => !p.ready).map(podKey)]);
  let room = resolveMaxUnavailable(strategy.maxUnavailable, c.matched.length) - unavailable.size;
  const inFlight = new Set(c.inFlight.map(podKey));
  const taken = new Set(c.taken.map((t) => podKey(t.pod)));
  // Pods to upgrade now, the budget aside: one ContainerRestart per pod and image set, never made again once it
  // ended (a failed one stops the upgrade).
  const candidates = c.injected.filter(
    (p) => !held.has(podKey(p)) && !inFlight.has(podKey(p)) && !taken.has(podKey(p)) && selectorMatches(strategy.selector, p.labels) && c.stale(p).length > 0 && !(c.byPod.get(podKey(p)) ?? []).some((r) => r.name === restartName(set, p, c.key)),
  );
  const actions: SidecarRestartAction[] = [];
  for (const p of go ? candidates : []) {
    if (room <= 0) break;
    actions.push({ name: restartName(set, p, c.key), namespace: p.namespace, pod: p.name, containers: c.stale(p).map((s) => ({ name: s.name, image: c.wanted.get(s.name) as string })), imagesKey: c.key });
    room--;
  }
  return { candidates, actions, held };
}

/** The Updated condition's reason and message. */
function updatedCondition(set: SidecarSet, c: Classified, actions: SidecarRestartAction[], held: Set<string>, gate: PrewarmGate | undefined): [string, string] {
  const strategy = set.spec.updateStrategy ?? {};
  const pending = c.injected.length - c.updated.length;
  const f = c.failures[0];
  if (f) return [SidecarReasons.failed, `the sidecar upgrade stopped: pod ${f.pod} container ${f.container ?? '?'} failed (${f.reason})`];
  const t = c.taken[0];
  if (t) return [SidecarReasons.nameTaken, `pod ${podKey(t.pod)} not upgraded: ${t.conflict.message}${c.taken.length > 1 ? ` (and ${c.taken.length - 1} more pod(s))` : ''}; ${c.updated.length} of ${c.injected.length} injected pods updated`];
  if (pending === 0) return [SidecarReasons.complete, `${c.updated.length} of ${c.injected.length} injected pods run the current sidecars`];
  if (strategy.paused) return [SidecarReasons.paused, `paused with ${pending} injected pod(s) on older sidecars`];
  if (gate?.hold) return gate.hold;
  if (c.inFlight.length === 0 && actions.length === 0 && held.size > 0) return [SidecarReasons.partitioned, `${pending} injected pod(s) kept on older sidecars by partition ${strategy.partition}`];
  return [SidecarReasons.updating, `${c.updated.length} of ${c.injected.length} injected pods updated`];
}

/** What to start, and the status: see the table at the top of this file. */
export function planSidecarSet(input: SidecarPlanInput): SidecarPlan {
  const { set, nowMs } = input;
  const strategy = set.spec.updateStrategy ?? {};
  const c = classify(input);
  const go = !strategy.paused && c.failures.length === 0;
  const first = restartActions(set, c, false);
  const started = input.restarts.some((r) => r.imagesKey === c.key);
  const gate = go && strategy.prewarm && !started && first.candidates.length > 0 ? prewarmGate(set, c.key, first.candidates.map((p) => p.namespace), input.prewarms ?? new Map(), nowMs) : undefined;
  const { actions, held } = go && !gate?.hold ? restartActions(set, c, true) : first;
  const [reason, message] = updatedCondition(set, c, actions, held, gate);
  const takenFailures: SidecarFailure[] = c.taken.map((t) => ({ pod: podKey(t.pod), reason: `${t.conflict.reason}: ${t.conflict.message}` }));
  const failures = [...c.failures, ...takenFailures];
  const status: SidecarSetStatus = {
    observedGeneration: set.metadata.generation,
    matchedPods: c.matched.length,
    injectedPods: c.injected.length,
    updatedPods: c.updated.length,
    readyPods: c.updated.filter((p) => p.ready).length,
    conflictPods: c.conflicts.length,
    olderSpecPods: c.olderSpec.length,
    podsInFlight: [...c.inFlight.map(podKey), ...actions.map((a) => `${a.namespace}/${a.pod}`)],
    ...(failures.length ? { failures: failures.slice(0, 100) } : {}),
    message,
    conditions: [keepTransition(set.status?.conditions, { type: UPDATED, status: reason === SidecarReasons.complete ? 'True' : 'False', reason, message }, new Date(nowMs).toISOString())],
  };
  return { actions, prewarms: gate?.create ?? [], keepPrewarms: gate?.wanted ?? [], status };
}
