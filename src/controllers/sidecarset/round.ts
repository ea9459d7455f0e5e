// One coordinator round over one SidecarSet: read (its pods, its own ContainerRestarts, its ImagePrewarms), plan
// (plan.ts), create what the plan asks for while still leading, delete the pre-warms no round needs any more, and
// write the status when it changed (progress alone paced, kit/status-pace.ts). Only what the SidecarSet owns is
// counted (ownership.ts); a create whose name is held by another's object is NameTaken in the status, backed off
// (kit/create-refusals.ts), and the other pods go on.
import type { Logger } from '../../log.js';
import { prewarmProgress, progressFromRecords } from '../image-prewarm/summary.js';
import type { NodePrewarm } from '../image-prewarm/types.js';
import { createOrTaken, type CreateConflict } from '../kit/create-or-taken.js';
import type { CreateRefusals } from '../kit/create-refusals.js';
import { PREWARM_RECHECK_MS } from '../kit/prewarm-settings.js';
import { statusWrite, type StatusWrites } from '../kit/status-pace.js';
import { ownedBySet, restartMismatch } from './ownership.js';
import { imagesKey, planSidecarSet, podMatched, SidecarReasons, type SidecarPlan, type SidecarPlanInput, type SidecarPodView } from './plan.js';
import { prewarmMismatch, prewarmPrefix, type SidecarPrewarmView } from './prewarm.js';
import type { SidecarSetApi } from './sidecarset-api.js';
import type { SidecarSet, SidecarSetStatus } from './types.js';
import { podView, restartObject, restartView } from './views.js';

/** What of a SidecarSet's status may wait for the pace: counts, pods in flight, messages. */
export const SIDECAR_PROGRESS: (keyof SidecarSetStatus)[] = ['matchedPods', 'injectedPods', 'updatedPods', 'readyPods', 'conflictPods', 'olderSpecPods', 'podsInFlight', 'message'];

/** What a round needs. */
export interface SidecarRoundDeps {
  api: SidecarSetApi;
  nowMs(): number;
  /** Whether this agent still coordinates; checked before every write. */
  leading(): boolean;
  log: Logger;
  /** Creates that could not be made, and their back-off (kept by the coordinator across rounds). */
  refusals: CreateRefusals;
  /** The last status write of each SidecarSet (kept by the coordinator). */
  statusWrites: StatusWrites;
}

/** One round over one SidecarSet; answers when it must look again with nothing heard (ms since the epoch). */
export async function reconcileSidecarSet(d: SidecarRoundDeps, set: SidecarSet): Promise<number | undefined> {
  const uid = set.metadata.uid ?? '';
  const generation = set.metadata.generation ?? 0;
  const [pods, restarts, listed] = await Promise.all([d.api.listPods(set), d.api.listRestarts(set), d.api.listPrewarms(set)]);
  const nsLabels = set.spec.namespaceSelector ? await d.api.namespaceLabels() : new Map<string, Record<string, string>>();
  const views = pods.map((p) => podView(p, nsLabels.get(p.metadata?.namespace ?? '') ?? {}));
  const own = listed.filter((pw) => pw.metadata.name.startsWith(prewarmPrefix(uid)));
  // Counted by owner, never by the label the list was narrowed by.
  const mine = restarts.filter((cr) => ownedBySet(uid, cr)).map(restartView);
  const input: SidecarPlanInput = { set, pods: views, restarts: mine, prewarms: await prewarmViews(d.api, set, own, views), conflicts: d.refusals.active(uid, generation, d.nowMs()), nowMs: d.nowMs() };
  const taken = await startPrewarms(d, set, planSidecarSet(input), input.prewarms ?? new Map());
  let plan = planSidecarSet({ ...input, prewarms: taken });
  const conflicts = await startRestarts(d, set, plan);
  // The status names what could not be made (its pods not counted as started); nothing more is done this round.
  if (conflicts.length > 0) plan = { ...planSidecarSet({ ...input, prewarms: taken, conflicts: [...(input.conflicts ?? []), ...conflicts] }), actions: [] };
  // Pre-warms of this SidecarSet that no round needs any more (started, or of older images): its own only.
  for (const pw of own) {
    if (!plan.keepPrewarms.includes(pw.metadata.name) && ownedBySet(uid, pw) && d.leading()) {
      await d.api.deletePrewarm(pw.metadata.name, pw.metadata.uid ?? '');
      d.log.info('sidecarset: pre-warm deleted', { sidecarset: set.metadata.name, prewarm: pw.metadata.name });
    }
  }
  const recheck = plan.status.conditions?.[0]?.reason === SidecarReasons.prewarming ? d.nowMs() + PREWARM_RECHECK_MS : undefined;
  const write = statusWrite(set.status, plan.status, d.statusWrites.last(uid), d.nowMs(), SIDECAR_PROGRESS);
  if (typeof write === 'number') return Math.min(write, recheck ?? Infinity);
  if (write === 'now' && d.leading()) {
    await d.api.writeStatus(set, plan.status);
    d.statusWrites.wrote(uid, d.nowMs());
  }
  return recheck;
}

/** Creates the pre-warms the plan asks for; answers the views with the names found taken by another's object. */
async function startPrewarms(d: SidecarRoundDeps, set: SidecarSet, plan: SidecarPlan, seen: ReadonlyMap<string, SidecarPrewarmView>): Promise<Map<string, SidecarPrewarmView>> {
  const taken = new Map(seen);
  for (const a of plan.prewarms) {
    if (!d.leading()) break;
    let got: Parameters<typeof prewarmProgress>[0] | undefined;
    const create = async () => {
      await d.api.createPrewarm(set, a);
      d.log.info('sidecarset: pre-warm created', { sidecarset: set.metadata.name, prewarm: a.name, namespace: a.namespace, images: a.images.join(',') });
    };
    const mismatch = (found: NonNullable<typeof got>) => prewarmMismatch(set, (got = found), a.namespace);
    const c = await createOrTaken({ kind: 'ImagePrewarm', name: a.name, owner: `SidecarSet ${set.metadata.name}`, create, found: () => d.api.getPrewarm(a.name), mismatch }, d.log);
    // Its name is taken by someone else's, which stops the upgrade before any pod.
    if (c && got) taken.set(a.name, { ...prewarmProgress(got), foreign: prewarmMismatch(set, got, a.namespace) ?? c.message });
  }
  return taken;
}

/** Creates the ContainerRestarts the plan asks for; answers those that could not be made. */
async function startRestarts(d: SidecarRoundDeps, set: SidecarSet, plan: SidecarPlan): Promise<CreateConflict[]> {
  const uid = set.metadata.uid ?? '';
  const conflicts: CreateConflict[] = [];
  if (plan.actions.length === 0) return conflicts;
  const requester = await d.api.requester();
  for (const a of plan.actions) {
    if (!d.leading()) break;
    const cr = restartObject(set, a, requester);
    const create = async () => {
      await d.api.createRestart(cr);
      d.log.info('sidecarset: sidecar upgrade started', { sidecarset: set.metadata.name, pod: `${a.namespace}/${a.pod}`, containerrestart: a.name, images: a.containers.map((c) => `${c.name}=${c.image}`).join(',') });
    };
    const owner = `SidecarSet ${set.metadata.name}`;
    const c = await createOrTaken({ kind: 'ContainerRestart', name: a.name, shown: `${a.namespace}/${a.name}`, owner, create, found: () => d.api.getRestart(a.namespace, a.name), mismatch: (f) => restartMismatch(set, f, cr) }, d.log);
    if (c) {
      conflicts.push(c);
      d.refusals.refused(uid, set.metadata.generation ?? 0, c, d.nowMs());
    } else d.refusals.created(uid, a.name);
  }
  return conflicts;
}

/**
 * The SidecarSet's ImagePrewarms as the planner sees them, by name. One of the current images that is not done
 * yet is judged by the nodes' own records over the nodes of the matched pods in its namespace (the summed-up
 * status comes every few seconds); the records are read once a round, and only then.
 */
async function prewarmViews(api: SidecarSetApi, set: SidecarSet, own: Parameters<typeof prewarmProgress>[0][], pods: SidecarPodView[]): Promise<Map<string, SidecarPrewarmView>> {
  const current = `${prewarmPrefix(set.metadata.uid ?? '')}${imagesKey(set)}-`;
  const views = new Map<string, SidecarPrewarmView>();
  let records: NodePrewarm[] | undefined | null = null;
  for (const pw of own) {
    if (!pw.metadata.name.startsWith(current)) continue;
    const namespace = pw.metadata.name.slice(current.length);
    const foreign = prewarmMismatch(set, pw, namespace);
    let view: SidecarPrewarmView = prewarmProgress(pw);
    if (!foreign && !view.done && view.failedNodes.length === 0) {
      // Without deploy/optional/fleet-prewarm-rbac.yaml the records cannot be listed: the status alone, then.
      if (records === null) records = await api.listNodePrewarms().catch(() => undefined);
      const nodes = pods.filter((p) => p.namespace === namespace && p.nodeName && !p.deleting && podMatched(set, p)).map((p) => p.nodeName as string);
      if (records && nodes.length > 0) view = progressFromRecords(pw, nodes, records);
    }
    views.set(pw.metadata.name, foreign ? { ...view, foreign } : view);
  }
  return views;
}
