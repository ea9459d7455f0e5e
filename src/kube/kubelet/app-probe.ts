// The new instance's own readiness probe, run by the agent before it opens the gate at the start (min-ready 0).
//
// Why: the kubelet probes a running, not yet ready container at once whenever it syncs the pod (its prober
// manager's UpdatePodStatus triggers the worker), and otherwise every periodSeconds. The gate's write is a pod
// update, so it brings such a sync. Written the moment the runtime shows the new instance, that sync probes an
// application still starting: the probe fails (a Warning `Unhealthy` Event, a write), and Ready waits for the
// next tick or relist, up to a period later. Written once the application answers the same probe, the sync's
// probe passes and Ready follows at once.
//
// Only a timing hint: Ready still needs the kubelet's own probe, the gate only waits for the agent's. The probes
// the agent runs are httpGet and tcpSocket against the pod's address (the agent shares the node's network); for
// exec and grpc probes, or a pod without an address, there is none, and the gate opens at the sight, as before.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Clock } from '../../clock.js';
import type { V1Container, V1Pod, V1Probe } from '../../k8s/client.js';

/** One try of the probe: true when it passed. Never rejects. */
export type AppProbe = () => Promise<boolean>;

/** Longest wait for one try, ms (the probe's own timeoutSeconds when shorter). */
const TRY_TIMEOUT_MS = 1000;

/** The port a probe names: a number, or the name of one of the container's ports. */
function portOf(port: number | string | undefined, c: V1Container): number | undefined {
  if (typeof port === 'number') return port;
  if (typeof port === 'string' && /^\d+$/.test(port)) return Number(port);
  return c.ports?.find((p) => p.name === port)?.containerPort;
}

/** The readiness probe of container `name` of pod, as one try the agent can run; undefined when it cannot. */
export function appProbe(pod: V1Pod, name: string): AppProbe | undefined {
  const c = pod.spec?.containers?.find((x) => x.name === name);
  const probe: V1Probe | undefined = c?.readinessProbe;
  const podIp = pod.status?.podIP;
  if (!c || !probe || !podIp) return undefined;
  const timeoutMs = Math.min(TRY_TIMEOUT_MS, (probe.timeoutSeconds ?? 1) * 1000);
  if (probe.httpGet) {
    const g = probe.httpGet;
    const port = portOf(g.port as number | string, c);
    if (port === undefined) return undefined;
    const scheme = (g.scheme ?? 'HTTP').toUpperCase();
    const headers = Object.fromEntries((g.httpHeaders ?? []).map((h) => [h.name, h.value]));
    const path = g.path ? (g.path.startsWith('/') ? g.path : `/${g.path}`) : '/';
    return () => httpTry(scheme === 'HTTPS', g.host || podIp, port, path, headers, timeoutMs);
  }
  if (probe.tcpSocket) {
    const port = portOf(probe.tcpSocket.port as number | string, c);
    if (port === undefined) return undefined;
    return () => tcpTry(probe.tcpSocket?.host || podIp, port, timeoutMs);
  }
  return undefined;
}

/** An HTTP(S) GET that passes, as the kubelet's does, on a status from 200 to 399 (redirects not followed). */
function httpTry(tls: boolean, host: string, port: number, path: string, headers: Record<string, string>, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const mod = tls ? https : http;
    const req = mod.request({ host, port, path, method: 'GET', headers: { 'User-Agent': 'inplace-agent-probe', ...headers }, timeout: timeoutMs, agent: false, ...(tls ? { rejectUnauthorized: false } : {}) }, (res) => {
      res.resume();
      resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 400);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** A TCP connect that passes once the connection opens. */
function tcpTry(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/** How often the probe is tried while the application starts, ms. */
export const APP_PROBE_EVERY_MS = 50;

/**
 * The longest wait for the application before the gate opens anyway, ms: one period of the probe (by then the
 * kubelet's own ticker has probed), from 1 s to 10 s.
 */
export function appProbeCapMs(pod: V1Pod, name: string): number {
  const period = pod.spec?.containers?.find((x) => x.name === name)?.readinessProbe?.periodSeconds ?? 10;
  return Math.min(10_000, Math.max(1000, period * 1000));
}

/**
 * Tries probe every APP_PROBE_EVERY_MS until it passes or capMs have passed, then calls open (once; with `true`
 * when the application answered). Stopped first (stop()), it never calls open.
 */
export function openWhenAnswering(probe: AppProbe, clock: Clock, capMs: number, open: (answered: boolean) => void): { stop(): void } {
  const ac = new AbortController();
  void (async () => {
    const until = clock.now() + capMs;
    for (;;) {
      const ok = await probe();
      if (ac.signal.aborted) return;
      if (ok || clock.now() >= until) {
        open(ok);
        return;
      }
      try {
        await clock.sleep(Math.min(APP_PROBE_EVERY_MS, Math.max(0, until - clock.now())), ac.signal);
      } catch {
        return;
      }
    }
  })();
  return { stop: () => ac.abort() };
}
