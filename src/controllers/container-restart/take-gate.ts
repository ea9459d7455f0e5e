// What an agent does with a request nobody has taken yet, before it claims it: refuse it when it waited past its
// unclaimedTTLSeconds (any agent may, the request is stale for all), wait while its pod is not on this node (or
// not started there yet), refuse a pod the API server does not know (a sandbox without a kubelet's labels, unless
// the agent was started to take those), and otherwise take it, with what the requester's check reads (the API
// server's pod, the ServiceAccounts).
import { AgentError } from '../../errors.js';
import { RefusalReasons } from '../../engine/reasons.js';
import type { ServiceAccountReader } from './requester-alive.js';
import type { AdmissionProbe } from './admission-as-requester.js';
import { podStarted, type FoundPod } from './pod-here.js';
import type { RequesterContext } from './requester-check.js';
import { keyOf, type ContainerRestart } from './types.js';
import { unclaimedDeadline, unclaimedExpired } from './unclaimed.js';

/** What the gate reads. */
export interface GateDeps {
  findPod(namespace: string, name: string): Promise<FoundPod | undefined>;
  /** Whether a request may name a standalone sandbox, one no API server knows (default: no). */
  standalonePods?: boolean;
  accounts?: ServiceAccountReader;
  /** Where the image patch is tried as the requester first (admission-as-requester.ts). */
  admission?: AdmissionProbe;
  admissionUnavailable?: () => void;
}

/**
 * The gate's answer: wait for the pod to come here ('absent') or to start ('starting'), until `due` at the latest
 * (ms); refuse with an error; or take with the check's context.
 */
export type Gate = { wait: 'absent' | 'starting'; due?: number } | { refuse: AgentError } | { take: RequesterContext };

/** Decides about an unclaimed request at time now (ms). */
export async function gateUnclaimed(cr: ContainerRestart, now: number, d: GateDeps): Promise<Gate> {
  const due = unclaimedDeadline(cr);
  if (due !== undefined && now >= due) return { refuse: unclaimedExpired(cr) };
  const ns = cr.metadata.namespace ?? 'default';
  const found = await d.findPod(ns, cr.spec.podName);
  // Not here yet, or here but not started yet: looked at again when the pod watch says it changed.
  const until = due !== undefined ? { due } : {};
  if (!found) return { wait: 'absent', ...until };
  if (found.api && !podStarted(found.api, cr.spec.containers.map((c) => c.name))) return { wait: 'starting', ...until };
  if (!found.api && !d.standalonePods) {
    return {
      refuse: new AgentError(
        'FailedPrecondition',
        `ContainerRestart ${keyOf(cr)}: pod ${ns}/${cr.spec.podName} is known to no API server (a sandbox on this node without a kubelet's labels); a ContainerRestart names pods of the API server only; nothing was touched`,
        { reason: RefusalReasons.PodNotInApiServer },
      ),
    };
  }
  return { take: { pod: found.api, accounts: d.accounts, admission: d.admission, admissionUnavailable: d.admissionUnavailable } };
}
