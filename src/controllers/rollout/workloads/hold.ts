// The hold of deploy/workload-hold-policy.yaml, as the agent reads and releases it: the annotations the policies
// write on a held workload (what the user's own value was), and the patches that give the workload back to its
// stock controller.

/** On a Deployment the hold paused (value "paused"); absent when its user paused it. */
export const DEPLOYMENT_HOLD_ANNOTATION = 'inplace-agent.io/hold';
/** On a Deployment whose template the rollout set back after its first pod failed: what failed (the hold policy removes it at the next template change). */
export const ROLLED_BACK_ANNOTATION = 'inplace-agent.io/rolled-back';
/** On a held StatefulSet: the user's partition, put back on release. */
export const PARTITION_HOLD_ANNOTATION = 'inplace-agent.io/hold-partition';
/** On a held DaemonSet: its rolling update ("maxUnavailable=1,maxSurge=0"), put back on release. */
export const DAEMONSET_HOLD_ANNOTATION = 'inplace-agent.io/hold-strategy';

/**
 * Releases a StatefulSet the hold holds: its partition back to the user's, the annotation removed (tested first).
 * `onDelete`: its user switched it to OnDelete meanwhile (it has no partition then): only the annotation removed.
 */
export function partitionRelease(partition: number, onDelete = false): JsonPatchOp[] {
  const ann = `/metadata/annotations/${escapeKey(PARTITION_HOLD_ANNOTATION)}`;
  return [
    { op: 'test', path: ann, value: String(partition) },
    { op: 'remove', path: ann },
    ...(onDelete ? [] : [{ op: 'replace' as const, path: '/spec/updateStrategy/rollingUpdate/partition', value: partition }]),
  ];
}

/** Releases a DaemonSet the hold holds: its rolling update back as recorded ("maxUnavailable=1,maxSurge=0"). */
export function strategyRelease(recorded: string): JsonPatchOp[] {
  const ann = `/metadata/annotations/${escapeKey(DAEMONSET_HOLD_ANNOTATION)}`;
  const fields = Object.fromEntries(recorded.split(',').map((kv) => kv.split('=')));
  const value = (v: string | undefined, dflt: number) => (v === undefined ? dflt : /^\d+$/.test(v) ? Number(v) : v);
  return [
    { op: 'test', path: ann, value: recorded },
    { op: 'remove', path: ann },
    { op: 'replace', path: '/spec/updateStrategy', value: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: value(fields.maxUnavailable, 1), maxSurge: value(fields.maxSurge, 0) } } },
  ];
}

/** A JSON patch operation. */
export interface JsonPatchOp {
  op: 'add' | 'replace' | 'remove' | 'test';
  path: string;
  value?: unknown;
}

const escapeKey = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Releases a Deployment the hold paused: paused false and the annotation removed, only if it is still held (the
 * annotation is tested, so a user's pause or a release by another coordinator meanwhile makes the patch fail).
 */
export function deploymentRelease(): JsonPatchOp[] {
  const ann = `/metadata/annotations/${escapeKey(DEPLOYMENT_HOLD_ANNOTATION)}`;
  return [
    { op: 'test', path: ann, value: 'paused' },
    { op: 'remove', path: ann },
    { op: 'replace', path: '/spec/paused', value: false },
  ];
}

/**
 * Sets a held Deployment's template back to `template` (its ReplicaSet's, what its pods run), noting why in
 * ROLLED_BACK_ANNOTATION (unless why is undefined: a user's undo); only while it is still held and paused, so the hold policy does not act on it.
 */
export function templateRestore(template: unknown, why?: string): JsonPatchOp[] {
  return [
    { op: 'test', path: `/metadata/annotations/${escapeKey(DEPLOYMENT_HOLD_ANNOTATION)}`, value: 'paused' },
    { op: 'test', path: '/spec/paused', value: true },
    { op: 'replace', path: '/spec/template', value: template },
    ...(why === undefined ? [] : [{ op: 'add' as const, path: `/metadata/annotations/${escapeKey(ROLLED_BACK_ANNOTATION)}`, value: why }]),
  ];
}
