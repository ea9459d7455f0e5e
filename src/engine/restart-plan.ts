// Pure planning of a restart: which containers of the pod are replaced, with which image and attempt.
// Everything a caller can get wrong is refused here, before anything on the node is touched.
import { AgentError } from '../errors.js';
import { quote } from '../quote.js';
import { formatDuration } from '../duration.js';
import { parseImageRef } from '../image-ref.js';
import type { Container, Pod } from '../runtime/types.js';
import type { RestartRequest } from './operation.js';
import { RefusalReasons as R } from './reasons.js';

/** Label the kubelet puts on every container it manages. */
export const KUBELET_POD_UID_LABEL = 'io.kubernetes.pod.uid';
/** Label or annotation holding a preStop exec command as a JSON array. */
export const PRE_STOP_KEY = 'inplace-agent.io/pre-stop';
/** Label the agent puts on a replacement: the operation that created it. */
export const OPERATION_LABEL = 'inplace-agent.io/operation';
/**
 * Label the agent puts on a replacement beside OPERATION_LABEL: the identity of the agent that created it (its
 * state directory's agent-id), so that its next start can tell its own leftovers from another agent's.
 */
export const AGENT_LABEL = 'inplace-agent.io/agent';

/** One container to replace. */
export interface PlannedTarget {
  name: string;
  current: Container;
  newImage: string;
  /** CRI attempt for the replacement: one above every attempt of that name in the pod. */
  newAttempt: number;
}

/** Options that change what is allowed. */
export interface PlanOptions {
  /** Allow containers that a kubelet manages (Kubernetes mode). */
  allowKubelet?: boolean;
  /**
   * An operation on the pod is queued or running, and this one will be planned again when its turn comes: a
   * container caught between its old and new instance (none running) is accepted, and checked then.
   */
  busy?: boolean;
}

/** One of several running containers of one name, as a refusal names it: its id, attempt, and whether the kubelet made it. */
function describeSameName(c: Container): string {
  return `${c.id.slice(0, 12)} attempt ${c.attempt}, ${c.labels[KUBELET_POD_UID_LABEL] ? "the kubelet's" : 'not made by the kubelet'}`;
}

/** Checks a request against the pod and its containers and returns the targets, in the order given. */
export function planRestart(pod: Pod, podContainers: Container[], req: RestartRequest, opts: PlanOptions): PlannedTarget[] {
  if (req.containers.length === 0) throw new AgentError('InvalidArgument', 'name at least one container to restart', { reason: R.InvalidRequest });
  const seen = new Set<string>();
  for (const name of req.containers) {
    if (seen.has(name)) throw new AgentError('InvalidArgument', `container ${quote(name)} is named twice`, { reason: R.InvalidRequest });
    seen.add(name);
  }
  for (const name of Object.keys(req.images)) {
    if (!seen.has(name)) throw new AgentError('InvalidArgument', `--image names container ${quote(name)}, which is not one of the containers to restart (${req.containers.join(', ')})`, { reason: R.InvalidRequest });
    try {
      parseImageRef(req.images[name]);
    } catch (err) {
      throw new AgentError('InvalidArgument', (err as Error).message, { cause: err, reason: R.InvalidRequest });
    }
  }
  if (!(req.graceSeconds >= 0)) throw new AgentError('InvalidArgument', `grace period must be >= 0 seconds, got ${req.graceSeconds}`, { reason: R.InvalidRequest });
  if (!(req.minReadyMs >= 0)) throw new AgentError('InvalidArgument', `min-ready must be >= 0, got ${req.minReadyMs} ms`, { reason: R.InvalidRequest });
  checkDeadline(req);
  if (pod.state !== 'ready') throw new AgentError('FailedPrecondition', `pod ${pod.name} is not ready: its sandbox is stopped`, { reason: R.PodNotReady });

  const names = [...new Set(podContainers.map((c) => c.name))].sort();
  return req.containers.map((name) => {
    const same = podContainers.filter((c) => c.name === name);
    const running = same.filter((c) => c.state === 'running').sort((a, b) => b.attempt - a.attempt);
    if (same.length === 0) {
      throw new AgentError('NotFound', `container ${quote(name)} not found in pod ${pod.name} (it has: ${names.join(', ') || 'no containers'})`, { reason: R.ContainerNotFound });
    }
    if (running.length === 0 && opts.busy) running.push([...same].sort((a, b) => b.attempt - a.attempt)[0]);
    if (running.length === 0) {
      throw new AgentError('FailedPrecondition', `container "${name}" in pod ${pod.name} is not running (state ${same[0].state}); only running containers are restarted in place`, { reason: R.ContainerNotRunning });
    }
    if (running.length > 1) {
      throw new AgentError('FailedPrecondition', `pod ${pod.name} has ${running.length} running containers named "${name}" (${running.map(describeSameName).join('; ')}); refusing to guess, nothing was touched`, {
        reason: R.ContainerAmbiguous,
      });
    }
    const current = running[0];
    if (!opts.allowKubelet && current.labels[KUBELET_POD_UID_LABEL]) {
      throw new AgentError(
        'FailedPrecondition',
        `container "${name}" in pod ${pod.name} is managed by a kubelet (label ${KUBELET_POD_UID_LABEL}); recreating it behind the kubelet's back would fight it. Run the agent in Kubernetes mode for kubelet-managed pods`,
        { reason: R.KubeletManaged },
      );
    }
    // A pod whose id is one of its containers' (Docker: the first container holds the network namespace the
    // others join) loses its network with that container. A CRI sandbox is no container of its own.
    if (current.id === pod.id && podContainers.some((c) => c.id !== current.id)) {
      throw new AgentError(
        'FailedPrecondition',
        `container "${name}" owns the network namespace of pod ${pod.name}; other containers join it, and recreating it would cut them off`,
        { reason: R.OwnsPodNetwork },
      );
    }
    const newImage = req.images[name] ?? current.image;
    const newAttempt = Math.max(...same.map((c) => c.attempt)) + 1;
    return { name, current, newImage, newAttempt };
  });
}

/**
 * The shortest deadline a restart can hold: every container's min-ready wait (the containers go one at a
 * time, and each replacement must keep running that long), plus one grace period for an old container that
 * takes all of it to stop. A deadline below it would stop a container only to roll it back.
 */
export function shortestDeadlineMs(req: Pick<RestartRequest, 'containers' | 'graceSeconds' | 'minReadyMs'>): number {
  return req.containers.length * req.minReadyMs + req.graceSeconds * 1000;
}

/** Refuses a deadline that cannot hold the restart (see shortestDeadlineMs); 0 means the caller's default. */
function checkDeadline(req: RestartRequest): void {
  const need = shortestDeadlineMs(req);
  if (req.timeoutMs > 0 && req.timeoutMs < need) {
    const n = req.containers.length;
    const waits = n === 1 ? `min-ready ${formatDuration(req.minReadyMs)}` : `${n} containers × min-ready ${formatDuration(req.minReadyMs)}`;
    throw new AgentError(
      'InvalidArgument',
      `timeout ${formatDuration(req.timeoutMs)} cannot hold ${waits} + grace ${req.graceSeconds}s (${formatDuration(need)}): the restart would be rolled back at the deadline; give a timeout of at least ${formatDuration(need)}, or a shorter min-ready or grace`,
      { reason: R.DeadlineTooShort },
    );
  }
}

/** The preStop command of a container, from its labels or annotations; undefined when it has none. */
export function preStopCommand(labels: Record<string, string>, annotations: Record<string, string>): string[] | undefined {
  const raw = annotations[PRE_STOP_KEY] ?? labels[PRE_STOP_KEY];
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new AgentError('InvalidArgument', `${PRE_STOP_KEY} must be a JSON array of strings, got ${JSON.stringify(raw)}`, { reason: R.InvalidPreStopHook });
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((s) => typeof s === 'string')) {
    throw new AgentError('InvalidArgument', `${PRE_STOP_KEY} must be a non-empty JSON array of strings, got ${JSON.stringify(raw)}`, { reason: R.InvalidPreStopHook });
  }
  return parsed as string[];
}

/** Seconds left for the stop after a preStop hook took hookMs of the grace period; at least 2 s, like the kubelet. */
export function remainingGrace(graceSeconds: number, hookMs: number): number {
  return Math.max(2, Math.ceil(graceSeconds - hookMs / 1000));
}
