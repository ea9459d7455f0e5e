// A deadline on each API request made with a client configuration (its watches are bounded by watch-deadline.ts):
// a request still unanswered then is aborted, so an API server that accepts and never replies fails the call
// instead of hanging it. The agent's requests get --kube-request-timeout (60 s by default); inplacectl's and
// kubectl inplace's get --request-timeout (cli/request-timeout.ts, which names the server in its one line).
//
// The deadline is put on the clients kc makes (makeApiClient), around the library's own HTTP transport, so that
// it ends with the request: an answered request leaves no timer behind and is never reported. (An earlier form
// armed the timer from the authentication hook, which cannot see the answer: every request, answered or not, was
// reported as timed out 60 s after it was sent, one warning line each, in bursts under load: docs/development.md.)
// Types only: the CLIs import this module before they know whether they need the client library.
import type { Configuration, HttpLibrary, KubeConfig, RequestContext, ResponseContext } from './client.js';

/** The agent's log line for a request aborted by its deadline. */
export const KUBE_REQUEST_DEADLINE = 'a Kubernetes API request got no answer within its deadline and was aborted';

/**
 * Gives every API request of the clients kc makes from now on a deadline of ms (0: none): one whose answer (its
 * status line and its whole body) has not come by then is aborted (its error is an AbortError) after onTimeout is
 * told. A request answered in time is neither aborted nor told. Returns kc.
 */
export function limitRequests(kc: KubeConfig, ms: number, onTimeout: () => void = () => undefined): KubeConfig {
  if (ms <= 0) return kc;
  const makeApiClient = kc.makeApiClient.bind(kc);
  kc.makeApiClient = ((apiClientType: new (config: Configuration) => object) => {
    // The library's own client, built on the library's configuration with its transport wrapped.
    const Limited = class extends apiClientType {
      constructor(config: Configuration) {
        super({ ...config, httpApi: deadlineTransport(config.httpApi, ms, onTimeout) });
      }
    };
    return makeApiClient(Limited as Parameters<typeof makeApiClient>[0]);
  }) as typeof kc.makeApiClient;
  return kc;
}

/** inner with a deadline of ms on each request, from its sending to the end of its body. */
function deadlineTransport(inner: HttpLibrary, ms: number, onTimeout: () => void): HttpLibrary {
  return {
    send(request: RequestContext) {
      const ctl = new AbortController();
      const given = request.getSignal();
      request.setSignal(given ? AbortSignal.any([given, ctl.signal]) : ctl.signal);
      let ended = false;
      const timer = setTimeout(() => {
        if (ended) return;
        onTimeout();
        ctl.abort();
      }, ms);
      timer.unref();
      const end = () => {
        ended = true;
        clearTimeout(timer);
      };
      const answered = inner.send(request).pipe((res: ResponseContext) => withBodyEnd(res, end));
      answered.toPromise().catch(end);
      return answered;
    },
  };
}

/** res whose body, read either way, calls end once read or failed. */
function withBodyEnd(res: ResponseContext, end: () => void): ResponseContext {
  const body = res.body;
  const settle = <T>(p: Promise<T>) => p.finally(end);
  res.body = { text: () => settle(body.text()), binary: () => settle(body.binary()) };
  return res;
}
