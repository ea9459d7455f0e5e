// Reads one container's status, as the kubelet reports it through the API server, relative to the instance
// the agent replaced: is the next instance up, crashed, held in the kubelet's restart back-off (and until when),
// or failing to be created (image pull errors)?
import type { V1ContainerStatus, V1Pod } from '../k8s/client.js';

/** What the API server shows of a container the agent is replacing. */
export type Observation =
  /** The old instance still runs (or has just exited and the kubelet has not acted yet). */
  | { kind: 'old' }
  /** No new instance yet; the kubelet is creating it (reason e.g. ContainerCreating). */
  | { kind: 'pending'; reason?: string }
  /** A new instance runs. */
  | { kind: 'running'; id: string; startedAt?: Date; ready: boolean; restartCount: number }
  /** The kubelet holds the next start back (CrashLoopBackOff after the old instance's exit). */
  | { kind: 'backoff'; until?: Date; message: string }
  /** A new instance ran and exited. */
  | { kind: 'crashed'; id: string; exitCode?: number; reason?: string; message: string }
  /** The kubelet cannot create the new instance (ErrImagePull, ImagePullBackOff, CreateContainerError...). */
  | { kind: 'error'; reason: string; message: string };

/** A container id without the runtime prefix (`containerd://`). */
export function bareId(containerID: string | undefined): string {
  if (!containerID) return '';
  const i = containerID.indexOf('://');
  return i >= 0 ? containerID.slice(i + 3) : containerID;
}

/** The status of a container (regular or sidecar) by name. */
export function containerStatus(pod: V1Pod, name: string): V1ContainerStatus | undefined {
  return (pod.status?.containerStatuses ?? []).concat(pod.status?.initContainerStatuses ?? []).find((s) => s.name === name);
}

/** Milliseconds of a Go duration string (`10s`, `1m20s`, `5m0s`, `300ms`); undefined when it is not one. */
export function goDurationMs(s: string): number | undefined {
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let total = 0;
  let matched = '';
  for (let m = re.exec(s); m; m = re.exec(s)) {
    const n = Number(m[1]);
    total += m[2] === 'h' ? n * 3_600_000 : m[2] === 'm' ? n * 60_000 : m[2] === 's' ? n * 1000 : n;
    matched += m[0];
  }
  return matched === s && s !== '' ? total : undefined;
}

/** The pending reason when the pod has no status for the container yet. */
const REASON_NO_STATUS = 'NoStatus';

/** The kubelet's reason of a waiting container held in its restart back-off. */
const CRASH_LOOP_BACK_OFF = 'CrashLoopBackOff';

/** Reasons of a waiting container that mean its next instance cannot be made. */
const CREATE_ERRORS = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError', 'PreStartHookError', 'PostStartHookError']);

/** Interprets a container's status against the id of the instance being replaced. */
export function observe(status: V1ContainerStatus | undefined, oldId: string): Observation {
  if (!status) return { kind: 'pending', reason: REASON_NO_STATUS };
  const id = bareId(status.containerID);
  const st = status.state ?? {};
  if (st.running) {
    if (id === oldId || id === '') return { kind: 'old' };
    return { kind: 'running', id, startedAt: st.running.startedAt ? new Date(st.running.startedAt) : undefined, ready: status.ready, restartCount: status.restartCount };
  }
  if (st.terminated) {
    if (id === oldId || id === '') return { kind: 'old' };
    const t = st.terminated;
    return { kind: 'crashed', id, exitCode: t.exitCode, reason: t.reason, message: `exited with code ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}` };
  }
  const w = st.waiting;
  if (!w) return { kind: 'pending' };
  const last = status.lastState?.terminated;
  const lastId = bareId(last?.containerID);
  if (w.reason === CRASH_LOOP_BACK_OFF) {
    if (last && lastId && lastId !== oldId) {
      return { kind: 'crashed', id: lastId, exitCode: last.exitCode, reason: last.reason, message: `exited with code ${last.exitCode}${last.reason ? ` (${last.reason})` : ''}; the kubelet is backing off` };
    }
    const wait = /back-off (\S+) restarting/.exec(w.message ?? '');
    const ms = wait ? goDurationMs(wait[1]) : undefined;
    const until = ms !== undefined && last?.finishedAt ? new Date(new Date(last.finishedAt).getTime() + ms) : undefined;
    return { kind: 'backoff', until, message: w.message ?? CRASH_LOOP_BACK_OFF };
  }
  if (w.reason && CREATE_ERRORS.has(w.reason)) return { kind: 'error', reason: w.reason, message: w.message ?? w.reason };
  return { kind: 'pending', reason: w.reason };
}
