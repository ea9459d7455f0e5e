// How long a ContainerRestart may wait to be taken. A request made for a pod that is not on a node yet waits for
// it; without a bound it would run whenever the pod came, days later, for a creator whose rights were checked as
// of then but whose intent is long stale. spec.unclaimedTTLSeconds (the CRD's default: one hour) counts from the
// object's creation; once it is past, an agent marks the request Failed instead of taking it. The claim ends the
// wait: from then on spec.activeDeadlineSeconds bounds the run.
import { AgentError } from '../../errors.js';
import { RefusalReasons } from '../../engine/reasons.js';
import { keyOf, type ContainerRestart } from './types.js';

/** The CRD's default of spec.unclaimedTTLSeconds, used when an object was stored before the field existed. */
export const UNCLAIMED_TTL_DEFAULT_SECONDS = 3600;

/** When (ms since the epoch) the request stops waiting; undefined when its creation time is unknown. */
export function unclaimedDeadline(cr: ContainerRestart): number | undefined {
  const created = cr.metadata.creationTimestamp;
  const at = created === undefined ? NaN : new Date(created).getTime();
  if (Number.isNaN(at)) return undefined;
  return at + (cr.spec.unclaimedTTLSeconds ?? UNCLAIMED_TTL_DEFAULT_SECONDS) * 1000;
}

/** The refusal of a request nobody took in time: AgentError FailedPrecondition, reason UnclaimedRequestExpired. */
export function unclaimedExpired(cr: ContainerRestart): AgentError {
  const ttl = cr.spec.unclaimedTTLSeconds ?? UNCLAIMED_TTL_DEFAULT_SECONDS;
  return new AgentError(
    'FailedPrecondition',
    `ContainerRestart ${keyOf(cr)} was not taken within its unclaimedTTLSeconds (${ttl} s from its creation; its pod ${cr.spec.podName} was not on a node, or not started there, until then); it is not run; nothing was touched`,
    { reason: RefusalReasons.UnclaimedExpired },
  );
}
