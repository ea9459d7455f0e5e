// A deadline on every call the agent makes to its runtime after start-up (start-up's own is --runtime-timeout,
// detect.ts): a runtime that wedges later (accepts, never answers) fails the call with DeadlineExceeded naming
// the call and the socket, instead of holding the operation, its pod's queue and a node-wide slot for ever. The
// CRI adapter also puts a deadline on each unary call (client.ts); dockerode puts none, so for Docker this is the
// only bound. A call that waits on purpose gets its wait on top: a stop its grace period, an exec its timeout (an
// exec with none, 0, is left as asked). Pulls are bounded by the pull service (the stall watch and the request's
// timeout), and the event stream is a stream: both are left as they are.
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Runtime } from './runtime.js';

/** The default deadline of one call (--runtime-call-timeout): the CRI adapter's own (30 s) and the time a busy runtime may take beyond it. */
export const DEFAULT_RUNTIME_CALL_TIMEOUT = '60s';

/** The calls that answer at once when the runtime is well: each gets the deadline as it is. */
const PROMPT_CALLS = new Set<string>([
  'version', 'listPods', 'getPod', 'listContainers', 'containerState', 'inspectContainer', 'createContainer', 'startContainer',
  'removeContainer', 'swapNames', 'restoreNames', 'inspectImage', 'listImages', 'imageFsUsage', 'pinImage', 'pinFor', 'unpinFor', 'pinnedImages',
]);

/** p, or DeadlineExceeded once ms have passed on clock. */
async function within<T>(p: Promise<T>, ms: number, clock: Clock, what: () => string): Promise<T> {
  const timer = new AbortController();
  const late = clock.sleep(ms, timer.signal).then(
    () => Promise.reject(new AgentError('DeadlineExceeded', what())),
    () => new Promise<never>(() => undefined), // the call ended first
  );
  try {
    return await Promise.race([p, late]);
  } finally {
    timer.abort();
  }
}

/**
 * rt with a deadline of ms on each call (plus the stop's grace period or the exec's timeout); endpoint names the
 * socket in the error; ms 0 leaves rt as it is. Everything else (kind, capabilities, replacementName, pullImage,
 * events, close) is rt's own.
 */
export function withCallDeadlines(rt: Runtime, endpoint: string, ms: number, clock: Clock): Runtime {
  if (ms <= 0) return rt;
  const late = (call: string, limitMs: number) => () => `container runtime at ${endpoint} did not answer ${call} within ${limitMs / 1000}s`;
  return new Proxy(rt, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function' || typeof prop !== 'string') return v;
      const call = v as (...args: unknown[]) => unknown;
      if (PROMPT_CALLS.has(prop)) return (...args: unknown[]) => within(call.apply(target, args) as Promise<unknown>, ms, clock, late(prop, ms));
      if (prop === 'stopContainer') {
        return (id: string, graceSeconds: number) => {
          const limit = graceSeconds * 1000 + ms;
          return within(call.call(target, id, graceSeconds) as Promise<void>, limit, clock, late(prop, limit));
        };
      }
      if (prop === 'exec') {
        return (id: string, cmd: string[], timeoutSeconds: number) => {
          const p = call.call(target, id, cmd, timeoutSeconds) as Promise<unknown>;
          if (!(timeoutSeconds > 0)) return p;
          const limit = timeoutSeconds * 1000 + ms;
          return within(p, limit, clock, late(prop, limit));
        };
      }
      return call.bind(target);
    },
  });
}
