// What the creator of each request object must be allowed to do themselves, as Kubernetes permissions: one rule
// per object, the same rule that deploy/admission-policy.yaml enforces at admission and the agent checks again
// (access-review.ts) before it acts. A request grants nothing beyond its creator's own rights.

/** One permission, as a SubjectAccessReview's resourceAttributes. */
export interface Permission {
  verb: string;
  group: string;
  resource: string;
  namespace?: string;
  name?: string;
}

/** Permissions of which the requester must hold at least one. */
export interface Need {
  anyOf: Permission[];
  /** What the permission is for, for messages. */
  why: string;
}

/** `patch pods/web in namespace shop`: the permission as a user would grant it. */
export function permissionText(p: Permission): string {
  const res = `${p.resource}${p.group ? `.${p.group}` : ''}${p.name ? `/${p.name}` : ''}`;
  return `${p.verb} ${res}${p.namespace ? ` in namespace ${p.namespace}` : ' (cluster-wide)'}`;
}

/** The fields of a ContainerRestart the rule reads. */
export interface ContainerRestartShape {
  metadata: { namespace?: string };
  spec: { podName: string; containers: { name: string; image?: string }[]; allowStaticPod?: boolean };
}

/**
 * The verb on containerrestarts that lets a request restart a static pod (spec.allowStaticPod). No role Kubernetes
 * ships names it, so only a wildcard (cluster-admin's `*`) or a role written for it grants it.
 */
export const RESTART_STATIC_VERB = 'restart-static';

/**
 * A ContainerRestart that changes an image needs `patch pods/NAME` (the agent writes the image into the pod's
 * spec); one that only restarts needs `delete` or `patch` on the pod (a restart is less than a delete). One that
 * opts in to a static pod (allowStaticPod) also needs `restart-static containerrestarts` in its namespace: deleting
 * a mirror pod never touches its containers, so the pod's rights say nothing about them.
 */
export function containerRestartNeeds(cr: ContainerRestartShape): Need[] {
  const ns = cr.metadata.namespace ?? 'default';
  const pod = { group: '', resource: 'pods', namespace: ns, name: cr.spec.podName };
  const needs: Need[] = [];
  const changed = cr.spec.containers.filter((c) => c.image !== undefined).map((c) => c.name);
  if (changed.length > 0) needs.push({ anyOf: [{ ...pod, verb: 'patch' }], why: `to change the image of ${changed.join(', ')}` });
  else needs.push({ anyOf: [{ ...pod, verb: 'delete' }, { ...pod, verb: 'patch' }], why: 'to restart its containers' });
  if (cr.spec.allowStaticPod === true) {
    needs.push({ anyOf: [{ verb: RESTART_STATIC_VERB, group: 'inplace-agent.io', resource: 'containerrestarts', namespace: ns }], why: 'to restart a static pod (spec.allowStaticPod)' });
  }
  return needs;
}

/** The fields of an ImagePrewarm the rule reads. */
export interface ImagePrewarmShape {
  metadata?: { name: string };
  spec: { imagePullSecrets?: { namespace: string; name: string }[]; podSelector?: { namespace: string }; pin?: boolean };
}

/**
 * An ImagePrewarm needs `get` on each pull Secret it names (the agents read them and pull with them),
 * `list pods` in the namespace of its podSelector (the agents list those pods to find their nodes), and with
 * `pin: true` the verb `pin` on itself (deploy/prewarm-pin-policy.yaml asks the same at admission).
 */
export function imagePrewarmNeeds(pw: ImagePrewarmShape): Need[] {
  const needs: Need[] = (pw.spec.imagePullSecrets ?? []).map((s) => ({
    anyOf: [{ verb: 'get', group: '', resource: 'secrets', namespace: s.namespace, name: s.name }],
    why: 'to pull with that Secret',
  }));
  const sel = pw.spec.podSelector;
  if (sel) needs.push({ anyOf: [{ verb: 'list', group: '', resource: 'pods', namespace: sel.namespace }], why: 'to select nodes by the pods they run' });
  if (pw.spec.pin) needs.push({ anyOf: [{ verb: 'pin', group: 'inplace-agent.io', resource: 'imageprewarms', name: pw.metadata?.name }], why: 'to pin its images on the nodes' });
  return needs;
}

/** The workload kinds an InPlaceRollout may target, and their API resource. */
export const WORKLOAD_RESOURCES: Record<string, { group: string; resource: string }> = {
  Deployment: { group: 'apps', resource: 'deployments' },
  StatefulSet: { group: 'apps', resource: 'statefulsets' },
  DaemonSet: { group: 'apps', resource: 'daemonsets' },
  ReplicaSet: { group: 'apps', resource: 'replicasets' },
};

/** An InPlaceRollout needs `patch` on the workload it targets; undefined for a kind that is not a workload. */
export function rolloutNeeds(namespace: string, targetRef: { kind: string; name: string }): Need[] | undefined {
  const w = WORKLOAD_RESOURCES[targetRef.kind];
  if (!w) return undefined;
  return [{ anyOf: [{ verb: 'patch', ...w, namespace, name: targetRef.name }], why: `to roll out ${targetRef.kind} ${targetRef.name}` }];
}
