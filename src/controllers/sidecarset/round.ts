// One coordinator round over one SidecarSet: read (its pods, ContainerRestarts and ImagePrewarms), plan (plan.ts),
// create what the plan asks for while still leading, delete the pre-warms no round needs any more, and write the
// status when it changed.
import { isConflict } from '../../k8s/api-error.js';
import type { Logger } from '../../log.js';
import { prewarmProgress, progressFromRecords } from '../image-prewarm/summary.js';
import type { NodePrewarm } from '../image-prewarm/types.js';
import { imagesKey, planSidecarSet, podMatched, type SidecarPlan, type SidecarPlanInput, type SidecarPodView } from './plan.js';
import { ownedBySet, prewarmMismatch, prewarmPrefix, type SidecarPrewarmView } from './prewarm.js';
import type { SidecarSetApi } from './sidecarset-api.js';
import type { SidecarSet } from './types.js';

/** One round over one SidecarSet: read, plan, start the upgrades and pre-warms (while still leading), clean up, write the status. */
export async function reconcileSidecarSet(api: SidecarSetApi, set: SidecarSet, nowMs: number, leading: () => boolean, log: Logger): Promise<void> {
  const [pods, restarts, listed] = await Promise.all([api.listPods(set), api.listRestarts(set), api.listPrewarms(set)]);
  const uid = set.metadata.uid ?? '';
  const own = listed.filter((pw) => pw.metadata.name.startsWith(prewarmPrefix(uid)));
  const input: SidecarPlanInput = { set, pods, restarts, prewarms: await prewarmViews(api, set, own, pods), nowMs };
  let plan = planSidecarSet(input);
  const taken = new Map(input.prewarms);
  for (const a of plan.prewarms) {
    if (!leading()) return;
    try {
      await api.createPrewarm(set, a);
      log.info('sidecarset: pre-warm created', { sidecarset: set.metadata.name, prewarm: a.name, namespace: a.namespace, images: a.images.join(',') });
    } catch (err) {
      if (!isConflict(err)) throw err;
      // Its name is taken: by an earlier round's (seen next round), or by someone else's, which stops the upgrade.
      const found = await api.getPrewarm(a.name);
      const foreign = found && prewarmMismatch(set, found, a.namespace);
      if (foreign) taken.set(a.name, { ...prewarmProgress(found), foreign });
    }
  }
  if (taken.size > (input.prewarms?.size ?? 0)) plan = planSidecarSet({ ...input, prewarms: taken });
  await startRestarts(api, set, plan, leading, log);
  // Pre-warms of this SidecarSet that no round needs any more (started, or of older images): its own only.
  for (const pw of own) {
    if (!plan.keepPrewarms.includes(pw.metadata.name) && ownedBySet(uid, pw) && leading()) {
      await api.deletePrewarm(pw.metadata.name, pw.metadata.uid ?? '');
      log.info('sidecarset: pre-warm deleted', { sidecarset: set.metadata.name, prewarm: pw.metadata.name });
    }
  }
  const { lastTransitionTime: _a, ...was } = set.status?.conditions?.[0] ?? {};
  const { lastTransitionTime: _b, ...now } = plan.status.conditions?.[0] ?? {};
  const same = JSON.stringify({ ...set.status, conditions: was }) === JSON.stringify({ ...plan.status, conditions: now });
  if (leading() && !same) await api.writeStatus(set, plan.status);
}

async function startRestarts(api: SidecarSetApi, set: SidecarSet, plan: SidecarPlan, leading: () => boolean, log: Logger): Promise<void> {
  for (const a of plan.actions) {
    if (!leading()) return;
    try {
      await api.createRestart(set, a);
      log.info('sidecarset: sidecar upgrade started', { sidecarset: set.metadata.name, pod: `${a.namespace}/${a.pod}`, containerrestart: a.name, images: a.containers.map((c) => `${c.name}=${c.image}`).join(',') });
    } catch (err) {
      // Exists: started already (by this agent or an earlier coordinator); never a second one.
      if (!isConflict(err)) throw err;
    }
  }
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
