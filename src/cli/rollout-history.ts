// `inplacectl rollout history|undo NAME`, where they add to kubectl's: history shows, per revision of the target,
// its images and the pods that run it now (kubectl shows neither for pods updated in place); undo takes a held
// Deployment back to the template its pods run, which `kubectl rollout undo` refuses (the hold paused it). Anywhere
// else kubectl's own undo works in place, and undo says so rather than doing it a second way.
import type { V1Deployment, V1ReplicaSet } from '../k8s/client.js';
import type { PodView, RevisionView } from '../controllers/rollout/plan-types.js';
import type { PodTemplate } from '../controllers/rollout/template-diff.js';
import { DEPLOYMENT_HOLD_ANNOTATION } from '../controllers/rollout/workloads/hold.js';
import { withoutHash } from '../controllers/rollout/workloads/deployment-view.js';

/** The revisions, oldest first, each with its images and the pods running it; `target` marks the one being rolled out. */
export function renderHistory(revisions: RevisionView[], pods: PodView[], target?: string): string {
  const rows = [...revisions].sort((a, b) => a.revision - b.revision).map((r) => {
    const on = pods.filter((p) => !p.deleting && p.revisionHash === r.hash).map((p) => p.name).sort();
    const images = (r.template.spec?.containers ?? []).map((c) => `${c.name}=${c.image ?? ''}`).join(',');
    return [String(r.revision), r.hash + (r.hash === target ? ' (target)' : ''), images, on.length > 0 ? `${on.length}: ${on.join(' ')}` : '0'];
  });
  const head = ['REVISION', 'HASH', 'IMAGES', 'PODS'];
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [head, ...rows].map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(width[i]))).join('  ')).join('\n');
}

/**
 * What `rollout undo` does: the template a held Deployment goes back to, or why it leaves undo to kubectl or refuses.
 * onNew: the pods that run, or are being taken to, the held template (the ReplicaSet's would then not be theirs).
 */
export function undoTarget(kind: string, name: string, d: V1Deployment | undefined, replicaSets: V1ReplicaSet[], onNew = 0): { template: PodTemplate } | { refuse: string } {
  if (kind !== 'Deployment') return { refuse: `${kind} ${name}: kubectl rollout undo ${kind.toLowerCase()}/${name} is carried out in place (its ControllerRevisions keep every template)` };
  if (!d) return { refuse: `Deployment ${name} not found` };
  if (!(d.spec?.paused === true && d.metadata?.annotations?.[DEPLOYMENT_HOLD_ANNOTATION] === 'paused')) {
    return { refuse: `Deployment ${name} is not held: kubectl rollout undo deployment/${name} is carried out in place (the history ReplicaSet keeps the previous template)` };
  }
  const withPods = replicaSets.filter((rs) => (rs.spec?.replicas ?? 0) > 0 && rs.metadata?.ownerReferences?.some((o) => o.uid === d.metadata?.uid));
  if (onNew > 0) return { refuse: `Deployment ${name}: ${onNew} pods already run or are being taken to its new template; change the template instead (kubectl set image, or kubectl rollout resume to hand it to the stock rolling update)` };
  if (withPods.length !== 1) return { refuse: `Deployment ${name}: ${withPods.length} ReplicaSets hold pods, so there is no one template its pods run` };
  return { template: withoutHash(JSON.parse(JSON.stringify(withPods[0].spec?.template ?? {})) as PodTemplate) };
}
