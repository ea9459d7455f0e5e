// A Deployment as the planner sees it. Its pods belong to a ReplicaSet and keep it: updated in place, a pod keeps
// its pod-template-hash label, and is marked instead with the annotation POD_TEMPLATE_ANNOTATION naming the
// template it runs. The revisions are the Deployment's ReplicaSets (their templates, without pod-template-hash),
// plus, while the Deployment's template differs from its ReplicaSet's, that template as the target:
//
//   the Deployment's template equals its ReplicaSet's         target = that ReplicaSet (nothing to do)
//   it differs, the Deployment held (paused by the hold)      target = the template (hash "t" + a digest of it)
//     only images and template annotations changed            pods updated in place, then finish (see below)
//     anything else                                           hand-over: the hold released, the stock rolling
//                                                              update recreates the pods (status HandedOver)
//   it differs, paused by its user                           Paused: nothing done
//   it differs, not paused (no policy), or several
//   ReplicaSets hold pods (a stock rolling update)           NotHeld / StockRollingUpdate: nothing done
//
// Marked, once the first pod is to be updated: the ReplicaSet's template is kept in the history ReplicaSet, then
// becomes the Deployment's plus POD_TEMPLATE_ANNOTATION naming the target (deployment-round.ts), so that pods a
// scale adds are born on the target, already marked. That annotation keeps it unequal to the Deployment's (the
// controller does not adopt it early); the revision of its pods is then the history's template, the old one.
// Finish, once every pod runs the target and is available: the ReplicaSet's template is replaced by the
// Deployment's (its pod-template-hash kept), then the hold released; the paused Deployment controller then adopts
// that ReplicaSet as its new one (it compares templates ignoring the hash), so no pod is created.
import { createHash } from 'node:crypto';
import type { V1Deployment, V1Pod, V1ReplicaSet } from '../../../k8s/client.js';
import type { PodView, RevisionView, WorkloadView } from '../plan-types.js';
import { POD_TEMPLATE_ANNOTATION } from '../plan-types.js';
import { diffTemplates, type PodTemplate } from '../template-diff.js';
import { sameJson } from '../../../same-json.js';
import { DEPLOYMENT_HOLD_ANNOTATION, ROLLED_BACK_ANNOTATION } from './hold.js';
import { controlledBy } from '../../kit/ownership.js';

import { historyName, POD_TEMPLATE_HASH_LABEL, RS_REVISION_ANNOTATION } from './history.js';

export { POD_TEMPLATE_HASH_LABEL } from './history.js';

/** Reasons a Deployment's rollout gives, beyond the planner's. */
export const DEPLOYMENT_REASON = {
  /** The template changed and the Deployment is not paused: the hold is not installed. */
  notHeld: 'NotHeld',
  /** The Deployment controller is rolling it out (several ReplicaSets hold pods). */
  stockRollingUpdate: 'StockRollingUpdate',
  /** A change beyond images and annotations: the hold was released for the stock rolling update. */
  handedOver: 'HandedOver',
  pausedByUser: 'PausedByUser',
  /** Its first pod failed on the new template and was rolled back; the rollout set the template back to its pods'. */
  rolledBack: 'RolledBack',
  /** Its ReplicaSet is marked with a target but the history ReplicaSet with its pods' template is gone. */
  historyMissing: 'HistoryMissing',
} as const;

/** A Deployment's view, revisions and pods, and the ReplicaSet that holds its pods. */
export interface DeploymentObserved {
  workload: WorkloadView;
  revisions: RevisionView[];
  pods: PodView[];
  rs?: V1ReplicaSet;
  /** The ReplicaSet that keeps the previous template for kubectl rollout undo (history.ts), once made. */
  history?: V1ReplicaSet;
  /** The Deployment's spec.selector.matchLabels. */
  selector: Record<string, string>;
  /** Paused by the hold (deploy/workload-hold-policy.yaml). */
  held?: boolean;
  /** Held, and what differs is more than images and annotations: the hold is to be released. */
  handOver?: string;
  /** The target hash the ReplicaSet's template is marked with (markedTemplate), if it is. */
  marked?: string;
  /** Its revisionHistoryLimit is 0: the controller deletes the history ReplicaSet, so its ReplicaSet is not marked. */
  noHistory?: boolean;
  /** The template its pods were made from (the history's while the ReplicaSet is marked), without pod-template-hash. */
  previous?: PodTemplate;
}

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v ?? {})) as T;

/** A ReplicaSet's template without its pod-template-hash label (as the Deployment's reads). */
export function withoutHash(t: PodTemplate): PodTemplate {
  const labels = { ...(t.metadata?.labels ?? {}) };
  delete labels[POD_TEMPLATE_HASH_LABEL];
  return { ...t, metadata: { ...(t.metadata ?? {}), labels } };
}

/** t with POD_TEMPLATE_ANNOTATION set to hash (or removed, hash undefined): the ReplicaSet's template while marked. */
export function markedTemplate(t: PodTemplate, hash?: string): PodTemplate {
  const annotations: Record<string, string> = { ...(t.metadata?.annotations ?? {}) };
  delete annotations[POD_TEMPLATE_ANNOTATION];
  if (hash !== undefined) annotations[POD_TEMPLATE_ANNOTATION] = hash;
  const metadata = { ...(t.metadata ?? {}), annotations };
  if (Object.keys(annotations).length === 0) delete (metadata as { annotations?: unknown }).annotations;
  return { ...t, metadata };
}

/** The name of a template no ReplicaSet has yet: "t" and a digest of it. */
export function templateHash(t: PodTemplate): string {
  return `t${createHash('sha256').update(JSON.stringify(canonicalize(t))).digest('hex').slice(0, 10)}`;
}

function canonicalize(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonicalize);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().filter((k) => (v as Record<string, unknown>)[k] != null).map((k) => [k, canonicalize((v as Record<string, unknown>)[k])]));
  return v;
}

/**
 * The Deployment's ReplicaSets, revisions and pods, as the planner reads them (see the table at the top);
 * handedOver: the rollout's last status said it handed the Deployment over (its stock rolling update is expected).
 */
export function deploymentObserved(d: V1Deployment, replicaSets: V1ReplicaSet[], pods: V1Pod[], basePods: (pods: V1Pod[], owners: Set<string>) => PodView[], handedOver = false): DeploymentObserved {
  const m = d.metadata ?? {};
  const name = m.name ?? '';
  const template = json(d.spec?.template) as PodTemplate;
  const owned = replicaSets.filter((rs) => controlledBy(m.uid ?? '', rs));
  const history = owned.find((r) => r.metadata?.name === historyName(name));
  const markOf = (rs: V1ReplicaSet) => rs.spec?.template?.metadata?.annotations?.[POD_TEMPLATE_ANNOTATION];
  // A marked ReplicaSet's pods were made from the template kept in the history (unless born marked, see above).
  const made = (rs: V1ReplicaSet) => withoutHash(json(markOf(rs) !== undefined && history ? history.spec?.template : rs.spec?.template) as PodTemplate);
  const revisions: RevisionView[] = owned.map((rs) => ({
    name: rs.metadata?.name ?? '',
    hash: rs.metadata?.labels?.[POD_TEMPLATE_HASH_LABEL] ?? rs.metadata?.name ?? '',
    revision: Number(rs.metadata?.annotations?.[RS_REVISION_ANNOTATION] ?? 0),
    template: markedTemplate(made(rs)),
  }));
  const withPods = owned.filter((rs) => (rs.spec?.replicas ?? 0) > 0 || (rs.status?.replicas ?? 0) > 0);
  const rs = withPods.length === 1 ? withPods[0] : undefined;
  const rsView = rs ? revisions.find((r) => r.name === rs.metadata?.name) : undefined;
  const paused = d.spec?.paused === true;
  const held = paused && m.annotations?.[DEPLOYMENT_HOLD_ANNOTATION] === 'paused';
  const same = !!rsView && sameJson(rsView.template, template);
  const top = Math.max(0, ...revisions.map((r) => r.revision));
  // Numbered by the Deployment's generation (it grows with every template change), so that two templates never
  // share a number, nor the names of their ContainerRestarts (names.ts).
  const number = Math.max(top + 1, m.generation ?? 0);
  const target: RevisionView = same && rsView ? rsView : { name: `${name}-${templateHash(template)}`, hash: templateHash(template), revision: number, template };
  const all = same ? revisions : [...revisions, target];
  const s = d.spec?.strategy;
  const base: WorkloadView = {
    kind: 'Deployment',
    name,
    uid: m.uid ?? '',
    generation: m.generation ?? 0,
    // A paused Deployment's controller still observes it; the planner waits for that.
    observedGeneration: d.status?.observedGeneration ?? 0,
    updateStrategy: s?.type ?? 'RollingUpdate',
    desired: d.spec?.replicas ?? 1,
    template,
    maxUnavailable: s?.type === 'Recreate' ? '100%' : (s?.rollingUpdate?.maxUnavailable ?? '25%'),
    marksPods: true,
  };
  const owners = new Set(owned.map((r) => r.metadata?.uid ?? ''));
  const views = basePods(pods, owners).map((p) => ({ ...p, revisionHash: p.annotations[POD_TEMPLATE_ANNOTATION] === target.hash ? target.hash : (p.labels[POD_TEMPLATE_HASH_LABEL] ?? '') }));
  const marked = rs ? markOf(rs) : undefined;
  const seen = { revisions: all, pods: views, rs, history, selector: d.spec?.selector?.matchLabels ?? {}, ...(marked !== undefined ? { marked } : {}), ...(rsView ? { previous: rsView.template } : {}), ...(d.spec?.revisionHistoryLimit === 0 ? { noHistory: true } : {}) };
  const gate = (phase: 'Progressing' | 'Paused' | 'Failed', reason: string, message: string): DeploymentObserved => ({ workload: { ...base, gate: { phase, reason, message } }, ...seen });
  const notHeld = `Deployment ${name} is not held, so its controller rolls the change out itself: install deploy/workload-hold-policy.yaml (Kubernetes 1.36), or pause it yourself (kubectl rollout pause) before changing its template`;
  // After a hand-over the stock rolling update is what was asked for; else the template changed with no hold.
  const stock = () => gate('Progressing', DEPLOYMENT_REASON.stockRollingUpdate, `the Deployment controller is rolling ${name} out itself (${withPods.length} ReplicaSets hold pods); the rollout acts once one ReplicaSet holds them all`);
  if (marked !== undefined && !history) return gate('Paused', DEPLOYMENT_REASON.historyMissing, `ReplicaSet ${rs?.metadata?.name ?? ''}'s template is marked ${marked} but the history ReplicaSet ${historyName(name)}, which keeps the template its pods were made from, is gone: set the ReplicaSet's template back by hand`);
  if (withPods.length > 1) return handedOver ? stock() : gate('Progressing', DEPLOYMENT_REASON.notHeld, `${notHeld} (${withPods.length} ReplicaSets hold pods)`);
  // Set back by the rollout after its first pod failed (deployment-round.ts): said until the next template change.
  const rolledBack = m.annotations?.[ROLLED_BACK_ANNOTATION];
  if (same && !held && rolledBack) return gate('Failed', DEPLOYMENT_REASON.rolledBack, `rolled back in place, the template set back to ReplicaSet ${rs?.metadata?.name ?? ''}'s: ${rolledBack}`);
  if (same || !rsView) return { workload: base, ...seen, held };
  if (!paused) return handedOver ? stock() : gate('Progressing', DEPLOYMENT_REASON.notHeld, notHeld);
  if (!held) return gate('Paused', DEPLOYMENT_REASON.pausedByUser, `Deployment ${name} is paused by its user (not by the hold): nothing is done until kubectl rollout resume`);
  const other = diffTemplates(rsView.template, template).other;
  if (other.length > 0) {
    const why = `${other.join(', ')} changed`;
    return { ...gate('Progressing', DEPLOYMENT_REASON.handedOver, `handed over to the Deployment controller's rolling update: ${why} (only images and template annotations change in place)`), handOver: why, held };
  }
  return { workload: base, ...seen, held };
}
