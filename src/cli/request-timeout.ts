// --request-timeout of inplacectl and kubectl inplace: how long one request to the agent or to the Kubernetes API
// server may go unanswered (a socket or server that accepts and never replies). Watches and an operation's
// progress are not requests: they last as long as what they follow.
import { Option } from 'commander';
import type { KubeConfig } from '@kubernetes/client-node';
import { durationFlagMs, formatDuration } from '../duration.js';
import { AgentError, asAgentError } from '../errors.js';
import { UsageError } from './args.js';
import { limitRequests } from '../k8s/request-deadline.js';

/** The default, as a duration flag takes it. */
export const DEFAULT_REQUEST_TIMEOUT = '30s';

/** The --request-timeout option. */
export function requestTimeoutOption(): Option {
  return new Option('--request-timeout <duration>', 'give up on a request to the agent or the API server that has no answer after this long (0: wait forever)').default(DEFAULT_REQUEST_TIMEOUT);
}

/** The flag's value in ms (0: no deadline); UsageError naming the flag otherwise. */
export function requestTimeoutMs(value: string): number {
  try {
    return durationFlagMs('--request-timeout', value, { zeroMeans: 'no deadline' });
  } catch (err) {
    throw new UsageError(asAgentError(err).message);
  }
}

/** The one line for a request that timed out. */
export function noAnswer(what: string, ms: number): AgentError {
  return new AgentError('DeadlineExceeded', `${what} did not answer within ${formatDuration(ms).replace(/\.0s$/, 's')} (--request-timeout)`);
}

/** The API request of this process that ran out of time, if one did (its error may reach main wrapped or renamed). */
let kubeTimedOut: AgentError | undefined;

/**
 * Gives every API request of kc a deadline of ms (0: none): a request still unanswered then is aborted, and
 * kubeTimeout() says so in one line naming the server. Watches (the library's Watch) are not limited.
 */
export function limitKubeRequests(kc: KubeConfig, ms: number): KubeConfig {
  return limitRequests(kc, ms, () => {
    kubeTimedOut = noAnswer(`the Kubernetes API server at ${kc.getCurrentCluster()?.server ?? '(unknown)'}`, ms);
  });
}

/**
 * The one-line error for err when it is an API request aborted by its deadline (the abort, perhaps wrapped by
 * kubeError); undefined otherwise. A deadline that passed after its request was answered aborts nothing.
 */
export function kubeTimeoutOf(err: unknown): AgentError | undefined {
  if (!kubeTimedOut) return undefined;
  for (let e = err as { name?: string; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.name === 'AbortError') return kubeTimedOut;
  }
  return undefined;
}
