// The previous template of a Deployment updated in place, kept for `kubectl rollout undo`. In place, the pods keep
// their one ReplicaSet and it takes the new template, so no ReplicaSet would carry the template before it, and
// kubectl (which rolls back to the ReplicaSet of the previous revision) would find no history. Before the
// ReplicaSet's template is replaced, the rollout therefore writes the template it had, with its revision number,
// to one ReplicaSet of 0 replicas owned by the Deployment: `NAME-inplace-previous`. The Deployment controller
// then numbers the pods' ReplicaSet one higher; `kubectl rollout history` lists both, and `kubectl rollout undo`
// copies the previous template back into the Deployment, which the hold takes in place like any other change.
// The name has vowels, so it is never one the Deployment controller makes (its hashes use none).
import type { V1ReplicaSet } from '../../../k8s/client.js';
import type { JsonPatchOp } from './hold.js';

/** The label the Deployment controller gives a ReplicaSet and its pods. */
export const POD_TEMPLATE_HASH_LABEL = 'pod-template-hash';
/** The pod-template-hash of the history ReplicaSet (its selector and template carry it, no pod does). */
export const HISTORY_HASH = 'inplace-previous';
/** The annotation of a ReplicaSet that numbers its revision (the Deployment controller's). */
export const RS_REVISION_ANNOTATION = 'deployment.kubernetes.io/revision';
/** kubectl's change cause, shown by `kubectl rollout history`; kept with the template it describes. */
const CHANGE_CAUSE_ANNOTATION = 'kubernetes.io/change-cause';

/** The name of a Deployment's history ReplicaSet. */
export function historyName(deployment: string): string {
  return `${deployment}-${HISTORY_HASH}`;
}

const escapeKey = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

/** The ReplicaSet's template, its pod-template-hash the history's. */
function previousTemplate(rs: V1ReplicaSet): NonNullable<V1ReplicaSet['spec']>['template'] {
  const t = JSON.parse(JSON.stringify(rs.spec?.template ?? {})) as NonNullable<V1ReplicaSet['spec']>['template'] & object;
  t.metadata = { ...(t.metadata ?? {}), labels: { ...(t.metadata?.labels ?? {}), [POD_TEMPLATE_HASH_LABEL]: HISTORY_HASH } };
  return t;
}

/** The annotations the history keeps of the ReplicaSet: its revision and change cause. */
function kept(rs: V1ReplicaSet): Record<string, string> {
  const a = rs.metadata?.annotations ?? {};
  return { [RS_REVISION_ANNOTATION]: a[RS_REVISION_ANNOTATION] ?? '0', ...(a[CHANGE_CAUSE_ANNOTATION] ? { [CHANGE_CAUSE_ANNOTATION]: a[CHANGE_CAUSE_ANNOTATION] } : {}) };
}

/** A new history ReplicaSet (0 replicas, owned by the Deployment) holding rs's template and revision. */
export function historyReplicaSet(deployment: { name: string; uid: string; selector: Record<string, string> }, rs: V1ReplicaSet): V1ReplicaSet {
  const template = previousTemplate(rs);
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: historyName(deployment.name),
      labels: { ...(template?.metadata?.labels ?? {}) },
      annotations: kept(rs),
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.name, uid: deployment.uid, controller: true }],
    },
    spec: { replicas: 0, selector: { matchLabels: { ...deployment.selector, [POD_TEMPLATE_HASH_LABEL]: HISTORY_HASH } }, template },
  };
}

/** The patch that makes the existing history ReplicaSet hold rs's template and revision (only if still that object). */
export function historyPatch(history: V1ReplicaSet, rs: V1ReplicaSet): JsonPatchOp[] {
  const ann = (k: string) => `/metadata/annotations/${escapeKey(k)}`;
  const keep = kept(rs);
  return [
    { op: 'test', path: '/metadata/uid', value: history.metadata?.uid },
    { op: 'test', path: '/metadata/resourceVersion', value: history.metadata?.resourceVersion },
    { op: 'replace', path: '/spec/template', value: previousTemplate(rs) },
    ...(history.metadata?.annotations ? [] : [{ op: 'add' as const, path: '/metadata/annotations', value: {} }]),
    ...Object.entries(keep).map(([k, v]) => ({ op: 'add' as const, path: ann(k), value: v })),
    ...(keep[CHANGE_CAUSE_ANNOTATION] === undefined && history.metadata?.annotations?.[CHANGE_CAUSE_ANNOTATION] !== undefined ? [{ op: 'remove' as const, path: ann(CHANGE_CAUSE_ANNOTATION) }] : []),
  ];
}
