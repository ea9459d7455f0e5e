// Finds the pod a caller means: `namespace/name`, a sandbox id, a unique id prefix of 6+ characters, or
// `docker/<sandbox container name>` (which is simply that pod's name on Docker).
import { AgentError } from '../errors.js';
import { quote } from '../quote.js';
import { MIN_ID_PREFIX } from '../id-prefix.js';
import type { Pod } from '../runtime/types.js';
import { RefusalReasons } from './reasons.js';


/** Picks one pod for arg; NotFound naming arg, or InvalidArgument when a prefix is ambiguous. */
export function resolvePod(pods: Pod[], arg: string): Pod {
  const wanted = arg.trim();
  if (wanted === '') throw new AgentError('InvalidArgument', 'pod must be given as NAMESPACE/NAME or a sandbox id', { reason: RefusalReasons.InvalidRequest });
  const byName = pods.filter((p) => p.name === wanted);
  if (byName.length > 0) return newest(byName);
  const byId = pods.find((p) => p.id === wanted);
  if (byId) return byId;
  if (wanted.length >= MIN_ID_PREFIX && /^[0-9a-f]+$/.test(wanted)) {
    const byPrefix = pods.filter((p) => p.id.startsWith(wanted));
    if (byPrefix.length === 1) return byPrefix[0];
    if (byPrefix.length > 1) {
      throw new AgentError('InvalidArgument', `pod id prefix ${quote(wanted)} is ambiguous: it matches ${byPrefix.length} pods (${byPrefix.map((p) => p.name).join(', ')})`, {
        reason: RefusalReasons.PodAmbiguous,
      });
    }
  }
  throw new AgentError('NotFound', `pod ${quote(wanted)} not found on this node (give NAMESPACE/NAME, a sandbox id, or an id prefix of at least ${MIN_ID_PREFIX} characters)`, {
    reason: RefusalReasons.PodNotFound,
  });
}

/** A ready sandbox over a not-ready one; the highest attempt, then the newest. */
function newest(pods: Pod[]): Pod {
  return [...pods].sort(
    (a, b) =>
      Number(b.state === 'ready') - Number(a.state === 'ready') ||
      b.attempt - a.attempt ||
      b.createdAt.getTime() - a.createdAt.getTime(),
  )[0];
}
