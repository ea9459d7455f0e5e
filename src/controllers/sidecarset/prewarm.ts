// The pre-warm of a SidecarSet's new images (updateStrategy.prewarm): before the first sidecar of an image set is
// recreated, every node holding a pod to upgrade pulls the images, through the fleet pre-warm
// (controllers/image-prewarm). An ImagePrewarm names its pods by one namespace and matchLabels, and a SidecarSet
// reaches many namespaces: one ImagePrewarm per namespace that has pods to upgrade, for the pods of the
// SidecarSet's selector.matchLabels there (its matchExpressions aside: a superset of the nodes at worst).
//
//   name        scs-UID8-IMAGESKEY-NAMESPACE (at most 87 characters): one per SidecarSet, image set and namespace
//   owner       a controller ownerReference to the SidecarSet; both cluster-scoped, so the garbage collector
//               deletes them with it
//   deleted     by the coordinator once no round needs it (the first sidecar restarted, or the images changed):
//               only its own (the ownerReference) and named with its prefix
//   not its own an object of that name without the ownerReference, or pulling other images: NameTaken, no pod
//               touched
import type { ImagePrewarm } from '../image-prewarm/types.js';
import type { PrewarmProgress } from '../image-prewarm/summary.js';
import { sameJson } from '../../same-json.js';
import { PREWARM_BACKOFF_LIMIT, PREWARM_PARALLEL_NODES, PREWARM_SILENT_HINT_MS } from '../kit/prewarm-settings.js';
import { KitReasons } from '../kit/reasons.js';
import { notSetOwned, setOwnerRef } from './ownership.js';
import type { SidecarSet } from './types.js';

/** A node not done this long after it first saw the pre-warm ends Failed, so a pre-warm never waits forever. */
export const PREWARM_DEADLINE_SECONDS = 600;

/** What every ImagePrewarm name of the SidecarSet with this uid starts with. */
export function prewarmPrefix(setUid: string): string {
  return `scs-${setUid.slice(0, 8).toLowerCase()}-`;
}

/** The ImagePrewarm name for one image set (plan.ts imagesKey) and namespace. */
export function prewarmName(setUid: string, key: string, namespace: string): string {
  return `${prewarmPrefix(setUid)}${key}-${namespace}`;
}

/** The images a SidecarSet's pre-warm pulls: every sidecar image, once, sorted (one per image set, so one per name). */
export function prewarmImages(set: SidecarSet): string[] {
  return [...new Set([...(set.spec.containers ?? []), ...(set.spec.initContainers ?? [])].map((c) => c.image ?? '').filter(Boolean))].sort();
}

/** An ImagePrewarm the planner saw under one of the SidecarSet's names. */
export interface SidecarPrewarmView extends PrewarmProgress {
  /** Why it is not the one the SidecarSet wants (another owner, other images or namespace); absent: it is. */
  foreign?: string;
}

/** An ImagePrewarm to create. */
export interface SidecarPrewarmAction {
  name: string;
  namespace: string;
  images: string[];
}

/** Why an existing ImagePrewarm is not the one the SidecarSet wants for (images, namespace); undefined: it is. */
export function prewarmMismatch(set: SidecarSet, pw: ImagePrewarm, namespace: string): string | undefined {
  const why = notSetOwned(set, pw);
  if (why) return `ImagePrewarm ${pw.metadata.name} exists: ${why}`;
  const same = sameJson([...(pw.spec?.images ?? [])].sort(), prewarmImages(set)) && pw.spec?.podSelector?.namespace === namespace;
  return same ? undefined : `ImagePrewarm ${pw.metadata.name} pulls other images or for another namespace than SidecarSet ${set.metadata.name} would`;
}

/** The ImagePrewarm of one namespace, owned by the SidecarSet (the agent that creates it is its requester, at admission). */
export function prewarmObject(set: SidecarSet, a: SidecarPrewarmAction, label: string): ImagePrewarm & { metadata: { labels: Record<string, string>; ownerReferences: object[] } } {
  return {
    metadata: {
      name: a.name,
      labels: { [label]: set.metadata.uid ?? '' },
      ownerReferences: [setOwnerRef(set)],
    },
    spec: {
      images: a.images,
      podSelector: { namespace: a.namespace, matchLabels: set.spec.selector.matchLabels ?? {} },
      maxParallelNodes: PREWARM_PARALLEL_NODES,
      backoffLimit: PREWARM_BACKOFF_LIMIT,
      activeDeadlineSeconds: PREWARM_DEADLINE_SECONDS,
    },
  };
}

/** What the pre-warm gate says: what to create, which pre-warms a round still needs, and why pods wait (if they do). */
export interface PrewarmGate {
  create: SidecarPrewarmAction[];
  wanted: string[];
  /** [reason, message] while the restarts wait; absent: every pre-warm is done, restarts may start. */
  hold?: [string, string];
}

/** The gate before the first restart of an image set: one pre-warm per namespace of the pods to upgrade. */
export function prewarmGate(set: SidecarSet, key: string, namespaces: string[], seen: ReadonlyMap<string, SidecarPrewarmView>, nowMs: number): PrewarmGate {
  const images = prewarmImages(set);
  const wanted = [...new Set(namespaces)].sort().map((namespace) => ({ name: prewarmName(set.metadata.uid ?? '', key, namespace), namespace }));
  const views = wanted.map((w) => seen.get(w.name));
  const names = wanted.map((w) => w.name);
  const foreign = views.find((v) => v?.foreign);
  if (foreign) return { create: [], wanted: names, hold: [KitReasons.nameTaken, `${foreign.foreign}; no pod touched`] };
  const failed = views.filter((v) => v && v.failedNodes.length > 0) as SidecarPrewarmView[];
  if (failed.length > 0) {
    const why = failed.map((v) => `${v.name}: ${v.failedNodes.map((n) => `node ${n.node}: ${n.reason}`).join(', ')}`).join('; ');
    return { create: [], wanted: names, hold: [KitReasons.prewarmFailed, `pre-warm failed, no pod touched: ${why}`] };
  }
  const create = wanted.filter((_, i) => !views[i]).map((w) => ({ ...w, images }));
  if (create.length === 0 && views.every((v) => v?.done)) return { create, wanted: names };
  const silent = views.some((v) => v?.silentSinceMs !== undefined && nowMs - v.silentSinceMs >= PREWARM_SILENT_HINT_MS);
  const hint = silent ? `; no agent has reported on it within ${PREWARM_SILENT_HINT_MS / 1000} s: apply deploy/optional/fleet-prewarm-rbac.yaml, or set updateStrategy.prewarm: false` : '';
  return { create, wanted: names, hold: [KitReasons.prewarming, `pulling ${images.join(', ')} on the nodes of the pods to upgrade (ImagePrewarm ${names.join(', ')})${hint}`] };
}
