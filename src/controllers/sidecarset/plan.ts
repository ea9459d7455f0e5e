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
import { selectorMatches } from './selector.js';
import { injectedAnnotation, type SidecarFailure, type SidecarSet, type SidecarSetStatus } from './types.js';
import { keepTransition, type TimedCondition } from '../../k8s/conditions.js';
import { differsBeyondImage } from './spec-drift.js';
import { prewarmGate, PrewarmReasons, type SidecarPrewarmAction, type SidecarPrewarmView } from './prewarm.js';

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
  prewarming: PrewarmReasons.prewarming,
  /** A node could not pull them: the upgrade stops before any pod. */
  prewarmFailed: PrewarmReasons.prewarmFailed,
  /** An ImagePrewarm of the SidecarSet's name is not its own: the upgrade stops before any pod. */
  nameTaken: PrewarmReasons.nameTaken,
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
  restarts: SidecarRestartView[];
  /** The ImagePrewarms seen under the SidecarSet's names, by name. */
  prewarms?: ReadonlyMap<string, SidecarPrewarmView>;
  nowMs: number;
}

const finished = (phase: string | undefined) => phase === 'Succeeded' || phase === 'Failed';
const podKey = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;

/** A short key of the SidecarSet's sidecar images (containers and native sidecars): the ContainerRestarts of one image set share it. */
export function imagesKey(set: SidecarSet): string {
  const images = [...(set.spec.containers ?? []), ...(set.spec.initContainers ?? [])].map((c) => `${c.name}=${c.image ?? ''}`).sort();
  return createHash('sha256').update(images.join('\n')).digest('hex').slice(0, 10);
}

/** The ContainerRestart name for one pod and image set: one per pod update, never two. */
export function restartName(set: SidecarSet, pod: SidecarPodView, key: string): string {
  return `${set.metadata.name}-${createHash('sha256').update(`${pod.uid}/${key}`).digest('hex').slice(0, 10)}`;
}

/** maxUnavailable as a number of pods: an integer as is, a percent of total rounded down; at least 1. */
export function unavailableBudget(v: number | string | undefined, total: number): number {
  if (v === undefined) return 1;
  if (typeof v === 'number') return Math.max(1, v);
  const pct = Number(v.replace(/%$/, ''));
  return Math.max(1, Math.floor((total * pct) / 100));
}

/** Whether the SidecarSet's selectors match the pod. */
export function podMatched(set: SidecarSet, p: SidecarPodView): boolean {
  return selectorMatches(set.spec.selector, p.labels) && (!set.spec.namespaceSelector || selectorMatches(set.spec.namespaceSelector, p.namespaceLabels));
}

/** A condition, keeping its transition time while its status stays. */
function condition(prev: SidecarSetStatus | undefined, next: Omit<TimedCondition, 'lastTransitionTime'>, now: string): TimedCondition {
  return keepTransition(prev?.conditions, next, now);
}

/** What to start, and the status: see the table at the top of this file. */
export function planSidecarSet(input: SidecarPlanInput): SidecarPlan {
  const { set, nowMs } = input;
  const strategy = set.spec.updateStrategy ?? {};
  const key = imagesKey(set);
  // Names are unique across containers and initContainers (the CRD says so): one map of wanted images.
  const wanted = new Map([...(set.spec.containers ?? []), ...(set.spec.initContainers ?? [])].map((c) => [c.name, c.image ?? '']));
  const sidecarNames = new Set(wanted.keys());
  const annotation = injectedAnnotation(set.metadata.name);

  const matched = input.pods.filter((p) => !p.deleting && podMatched(set, p)).sort((a, b) => podKey(a).localeCompare(podKey(b)));
  const injected = matched.filter((p) => p.annotations[annotation] !== undefined);
  const conflicts = matched.filter((p) => p.annotations[annotation] === undefined && [...p.containers, ...p.initContainers].some((c) => sidecarNames.has(c.name)));
  const byPod = new Map<string, SidecarRestartView[]>();
  for (const r of input.restarts) byPod.set(`${r.namespace}/${r.podName}`, [...(byPod.get(`${r.namespace}/${r.podName}`) ?? []), r]);
  const inFlight = injected.filter((p) => (byPod.get(podKey(p)) ?? []).some((r) => !finished(r.phase)));
  const inFlightKeys = new Set(inFlight.map(podKey));
  const stale = (p: SidecarPodView) => [...p.initContainers, ...p.containers].filter((c) => wanted.has(c.name) && wanted.get(c.name) !== c.image);
  const updated = injected.filter((p) => !inFlightKeys.has(podKey(p)) && stale(p).length === 0);
  const sidecarSpecs = [...(set.spec.containers ?? []), ...(set.spec.initContainers ?? [])];
  const olderSpec = injected.filter((p) => p.specs && sidecarSpecs.some((c) => !p.specs?.[c.name] || differsBeyondImage(c, p.specs[c.name] as object)));
  const failures: SidecarFailure[] = [];
  for (const p of injected) {
    for (const r of byPod.get(podKey(p)) ?? []) {
      if (r.imagesKey === key && r.phase === 'Failed') failures.push({ pod: podKey(p), ...(r.failure ?? { reason: SidecarReasons.restartFailed }) });
    }
  }

  // The last `partition` injected pods (namespace/name order) keep the older sidecars.
  const held = new Set(injected.slice(Math.max(0, injected.length - (strategy.partition ?? 0))).map(podKey));
  const budget = unavailableBudget(strategy.maxUnavailable, matched.length);
  const unavailable = new Set([...inFlight.map(podKey), ...matched.filter((p) => !p.ready).map(podKey)]);
  let room = budget - unavailable.size;
  // Pods to upgrade now, the budget aside: one ContainerRestart per pod and image set, never made again once it
  // ended (a failed one stops the upgrade).
  const candidates = injected.filter(
    (p) => !held.has(podKey(p)) && !inFlightKeys.has(podKey(p)) && selectorMatches(strategy.selector, p.labels) && stale(p).length > 0 && !(byPod.get(podKey(p)) ?? []).some((r) => r.name === restartName(set, p, key)),
  );
  const started = input.restarts.some((r) => r.imagesKey === key);
  const go = !strategy.paused && failures.length === 0;
  const gate = go && strategy.prewarm && !started && candidates.length > 0 ? prewarmGate(set, key, candidates.map((p) => p.namespace), input.prewarms ?? new Map(), nowMs) : undefined;
  const actions: SidecarRestartAction[] = [];
  if (go && !gate?.hold) {
    for (const p of candidates) {
      if (room <= 0) break;
      actions.push({ name: restartName(set, p, key), namespace: p.namespace, pod: p.name, containers: stale(p).map((c) => ({ name: c.name, image: wanted.get(c.name) as string })), imagesKey: key });
      room--;
    }
  }

  const pending = injected.length - updated.length;
  const now = new Date(nowMs).toISOString();
  const [reason, message] =
    failures.length > 0
      ? [SidecarReasons.failed, `the sidecar upgrade stopped: pod ${failures[0]?.pod} container ${failures[0]?.container ?? '?'} failed (${failures[0]?.reason})`]
      : pending === 0
        ? [SidecarReasons.complete, `${updated.length} of ${injected.length} injected pods run the current sidecars`]
        : strategy.paused
          ? [SidecarReasons.paused, `paused with ${pending} injected pod(s) on older sidecars`]
          : gate?.hold
            ? gate.hold
            : inFlight.length === 0 && actions.length === 0 && held.size > 0
            ? [SidecarReasons.partitioned, `${pending} injected pod(s) kept on older sidecars by partition ${strategy.partition}`]
            : [SidecarReasons.updating, `${updated.length} of ${injected.length} injected pods updated`];
  const status: SidecarSetStatus = {
    observedGeneration: set.metadata.generation,
    matchedPods: matched.length,
    injectedPods: injected.length,
    updatedPods: updated.length,
    readyPods: updated.filter((p) => p.ready).length,
    conflictPods: conflicts.length,
    olderSpecPods: olderSpec.length,
    podsInFlight: [...inFlight.map(podKey), ...actions.map((a) => `${a.namespace}/${a.pod}`)],
    ...(failures.length ? { failures: failures.slice(0, 100) } : {}),
    message,
    conditions: [condition(set.status, { type: UPDATED, status: reason === SidecarReasons.complete ? 'True' : 'False', reason, message }, now)],
  };
  return { actions, prewarms: gate?.create ?? [], keepPrewarms: gate?.wanted ?? [], status };
}
