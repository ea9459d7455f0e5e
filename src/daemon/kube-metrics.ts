// Kubernetes mode's Prometheus metrics: ContainerRestarts by result and reason, the drain's parts, each
// ImagePrewarm's nodes by state, and the agent's requests to the API server by verb and code. Loaded only in
// Kubernetes mode (through kube-wiring.ts).
import diagnostics from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ContainerRestartMetrics } from '../controllers/container-restart/metrics.js';
import type { DrainMetrics } from '../kube/drain-metrics.js';
import { kubeVerb } from '../k8s/request-verb.js';
import type { PrewarmMetrics } from '../controllers/image-prewarm/prewarm-metrics.js';

/** The metrics of Kubernetes mode, as the parts that report them take them. */
export interface KubeMetrics {
  restarts: ContainerRestartMetrics;
  drain: DrainMetrics;
  prewarm: PrewarmMetrics;
  /** Stops counting API requests. */
  close(): void;
}

/** Node states of an ImagePrewarm's status, as the `state` label. */
const PREWARM_STATES = ['succeeded', 'failed', 'pulling', 'waiting'] as const;

/** Registers Kubernetes mode's metrics in registry; API requests are those sent to server (the cluster's URL). */
export function kubeMetrics(registry: Registry, server: string): KubeMetrics {
  const registers = [registry];
  const counter = (name: string, help: string, labelNames: string[]) => new Counter({ name, help, labelNames, registers });
  const histogram = (name: string, help: string, labelNames: string[], buckets: number[]) => new Histogram({ name, help, labelNames, buckets, registers });
  const restarts = counter('inplace_containerrestarts_total', 'ContainerRestart requests this agent took and finished, by result (final operation state, or Refused) and reason (a reason constant; empty on success)', ['result', 'reason']);
  const restartSeconds = histogram('inplace_containerrestart_duration_seconds', 'Time from taking a ContainerRestart to its final status, by result and reason', ['result', 'reason'], [0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]);
  const drain = histogram(
    'inplace_drain_duration_seconds',
    'Time each part of the drain before a stop took (slices: the address leaving the EndpointSlices; dataplane: traffic stopping), by whether it completed or reached its bound',
    ['part', 'result'],
    [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
  );
  const prewarmNodes = new Gauge({
    name: 'inplace_imageprewarm_nodes',
    help: "Nodes of an ImagePrewarm by state (succeeded, failed, pulling: in flight, waiting), as its latest status says",
    labelNames: ['imageprewarm', 'state'],
    registers,
  });
  const requests = counter('inplace_kube_api_requests_total', 'Requests this agent sent to the API server, by Kubernetes verb and HTTP status code (<error> when no response came)', ['verb', 'code']);

  // A request is the API server's when it went to the cluster's scheme and host (Host header, port included
  // unless it is the scheme's default).
  const url = new URL(server);
  const port = url.port || (url.protocol === 'http:' ? '80' : '443');
  const toServer = (req: ClientRequest) => {
    const h = String(req.getHeader('host') ?? '');
    return req.protocol === url.protocol && (h === url.host || h === `${url.hostname}:${port}`);
  };
  const answered = new WeakSet<ClientRequest>();
  const onResponse = (msg: unknown) => {
    const { request, response } = msg as { request: ClientRequest; response: IncomingMessage };
    answered.add(request);
    if (toServer(request)) requests.inc({ verb: kubeVerb(request.method, request.path), code: String(response.statusCode ?? '<error>') });
  };
  const onError = (msg: unknown) => {
    const { request } = msg as { request: ClientRequest };
    // An error after the response's headers (a watch cut, a body aborted) was counted with its code already.
    if (toServer(request) && !answered.has(request)) requests.inc({ verb: kubeVerb(request.method, request.path), code: '<error>' });
  };
  diagnostics.subscribe('http.client.response.finish', onResponse);
  diagnostics.subscribe('http.client.request.error', onError);

  return {
    restarts: {
      finished: (result, reason, seconds) => {
        restarts.inc({ result, reason });
        restartSeconds.observe({ result, reason }, Math.max(0, seconds));
      },
    },
    drain: { observe: (part, seconds, completed) => drain.observe({ part, result: completed ? 'completed' : 'bound_reached' }, Math.max(0, seconds)) },
    prewarm: {
      progress: (name, status) => {
        for (const state of PREWARM_STATES) prewarmNodes.set({ imageprewarm: name, state }, status?.[state] ?? 0);
      },
      forget: (name) => {
        for (const state of PREWARM_STATES) prewarmNodes.remove({ imageprewarm: name, state });
      },
    },
    close: () => {
      diagnostics.unsubscribe('http.client.response.finish', onResponse);
      diagnostics.unsubscribe('http.client.request.error', onError);
    },
  };
}
