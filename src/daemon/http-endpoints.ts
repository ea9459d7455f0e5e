// The daemon's HTTP side door: Prometheus /metrics, liveness /healthz, readiness /readyz.
import http from 'node:http';
import type { Registry } from 'prom-client';
import { joinHostPort, parseHostPort } from '../host-port.js';

/** A running HTTP endpoint server. */
export interface HttpEndpoints {
  address: string;
  close(): Promise<void>;
}

/** The probes: each resolves with undefined when passing, or why it fails. */
export interface Probes {
  live: () => Promise<string | undefined>;
  ready: () => Promise<string | undefined>;
}

/** Serves metrics and probes on host:port. */
export async function startHttpEndpoints(addr: string, registry: Registry, probes: Probes): Promise<HttpEndpoints> {
  const { host, port } = parseHostPort(addr);
  const server = http.createServer((req, res) => {
    const send = (code: number, body: string, type = 'text/plain; charset=utf-8') => {
      res.writeHead(code, { 'content-type': type });
      res.end(body);
    };
    if (req.url === '/metrics') {
      registry.metrics().then((m) => send(200, m, registry.contentType), (e: unknown) => send(500, String(e)));
    } else if (req.url === '/healthz') {
      probes.live().then((why) => (why ? send(503, `not alive: ${why}\n`) : send(200, 'ok\n')), (e: unknown) => send(503, `not alive: ${String(e)}\n`));
    } else if (req.url === '/readyz') {
      probes.ready().then((why) => (why ? send(503, `not ready: ${why}\n`) : send(200, 'ok\n')), (e: unknown) => send(503, `not ready: ${String(e)}\n`));
    } else {
      send(404, 'not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address();
  const address = typeof a === 'object' && a ? joinHostPort(a.address, a.port) : addr;
  return { address, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
