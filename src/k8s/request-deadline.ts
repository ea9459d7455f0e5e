// A deadline on each API request made with a client configuration (its watches are bounded by watch-deadline.ts):
// a request still unanswered then is aborted, so an API server that accepts and never replies fails the call
// instead of hanging it. The agent's requests get DEFAULT_KUBE_REQUEST_TIMEOUT_MS; inplacectl's and kubectl
// inplace's get --request-timeout (cli/request-timeout.ts, which names the server in its one line).
import type { KubeConfig } from './client.js';

/** The agent's deadline of one API request, ms (kubectl's --request-timeout is 0, none; inplacectl's 30 s). */
export const DEFAULT_KUBE_REQUEST_TIMEOUT_MS = 60_000;

/** The agent's log line for a request aborted by its deadline. */
export const KUBE_REQUEST_DEADLINE = 'a Kubernetes API request got no answer within its deadline and was aborted';

/**
 * Gives every API request of kc a deadline of ms (0: none): one still unanswered then is aborted (its error is an
 * AbortError) after onTimeout is told. A deadline that passes after its request was answered aborts nothing. Returns kc.
 */
export function limitRequests(kc: KubeConfig, ms: number, onTimeout: () => void = () => undefined): KubeConfig {
  if (ms <= 0) return kc;
  const apply = kc.applySecurityAuthentication.bind(kc);
  kc.applySecurityAuthentication = async (context) => {
    await apply(context);
    const ctl = new AbortController();
    const timer = setTimeout(() => {
      onTimeout();
      ctl.abort();
    }, ms);
    timer.unref();
    const given = context.getSignal();
    context.setSignal(given ? AbortSignal.any([given, ctl.signal]) : ctl.signal);
  };
  return kc;
}
