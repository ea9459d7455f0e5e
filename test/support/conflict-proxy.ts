// A loopback HTTP proxy in front of a real kube-apiserver. It forwards every request unchanged (watches
// stream through), with the upstream's own credentials. Before forwarding chosen status writes it first
// changes the same object itself, straight on the API server, as a concurrent writer would: the forwarded
// write then carries a stale resourceVersion and the real API server answers it 409 Conflict.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';

/** One forwarded request and the upstream's status code. */
export interface ProxiedCall {
  method: string;
  path: string;
  status: number;
}

/** A running proxy. */
export interface ConflictProxy {
  /** A kubeconfig (JSON) pointing at the proxy, with no credentials of its own. */
  kubeconfigJson: string;
  calls: ProxiedCall[];
  close(): Promise<void>;
}

/**
 * Starts the proxy. Before the status writes that `conflictOn` selects (called with the method, the path and
 * the number of status writes seen so far on that path), `interfere` runs to completion.
 */
export async function startConflictProxy(
  upstream: KubeConfig,
  conflictOn: (method: string, path: string, nthStatusWrite: number) => boolean,
  interfere: () => Promise<void>,
): Promise<ConflictProxy> {
  const cluster = upstream.getCurrentCluster();
  if (!cluster) throw new Error('upstream kubeconfig has no cluster');
  const base = new URL(cluster.server);
  const calls: ProxiedCall[] = [];
  const statusWrites = new Map<string, number>();
  const server = http.createServer((req, res) => {
    void (async () => {
      const method = req.method ?? 'GET';
      const path = req.url ?? '/';
      if ((method === 'PUT' || method === 'PATCH') && /\/status(\?|$)/.test(path)) {
        const key = path.split('?')[0];
        const n = (statusWrites.get(key) ?? 0) + 1;
        statusWrites.set(key, n);
        if (conflictOn(method, path, n)) await interfere();
      }
      const opts: https.RequestOptions = { method, hostname: base.hostname, port: base.port || 443, path, headers: { ...req.headers, host: base.host } };
      delete (opts.headers as Record<string, unknown>).authorization;
      await upstream.applyToHTTPSOptions(opts);
      const up = https.request(opts, (ur) => {
        calls.push({ method, path, status: ur.statusCode ?? 0 });
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
      });
      up.on('error', (err) => {
        calls.push({ method, path, status: 502 });
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(String(err));
      });
      res.on('close', () => up.destroy());
      req.pipe(up);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const kubeconfigJson = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'proxy', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'none', user: {} }],
    contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'none' } }],
    'current-context': 'proxy',
  });
  return {
    kubeconfigJson,
    calls,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
