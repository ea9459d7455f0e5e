// Kubernetes mode's metrics: the verb of an API-server request, and the request counter fed by node's HTTP
// client (a real local HTTP server stands in for the API server; requests elsewhere are not counted).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { kubeMetrics } from '../../src/daemon/kube-metrics.js';
import { kubeVerb } from '../../src/k8s/request-verb.js';

describe('kube metrics', () => {
  it('reads the Kubernetes verb from method and path', () => {
    const cases: [string, string, string][] = [
      ['GET', '/api/v1/namespaces/ns/pods', 'list'],
      ['GET', '/api/v1/namespaces/ns/pods?fieldSelector=spec.nodeName%3Dn&watch=true&resourceVersion=5', 'watch'],
      ['GET', '/api/v1/namespaces/ns/pods/web', 'get'],
      ['GET', '/api/v1/pods?watch=1', 'watch'],
      ['GET', '/api/v1/namespaces', 'list'],
      ['GET', '/api/v1/namespaces/ns', 'get'],
      ['PATCH', '/api/v1/namespaces/ns/pods/web/status', 'patch'],
      ['POST', '/api/v1/namespaces/ns/events', 'create'],
      ['PUT', '/apis/coordination.k8s.io/v1/namespaces/ns/leases/slot-0', 'update'],
      ['GET', '/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices', 'list'],
      ['GET', '/apis/inplace-agent.io/v1alpha1/containerrestarts?watch=true', 'watch'],
      ['DELETE', '/apis/inplace-agent.io/v1alpha1/namespaces/ns/containerrestarts/r1', 'delete'],
      ['DELETE', '/apis/inplace-agent.io/v1alpha1/namespaces/ns/containerrestarts', 'deletecollection'],
      ['GET', '/version', 'get'],
      ['GET', '/apis', 'get'],
    ];
    for (const [m, p, want] of cases) assert.equal(kubeVerb(m, p), want, `${m} ${p}`);
  });

  it('counts requests to the API server by verb and code, and no others', async () => {
    const server = http.createServer((req, res) => {
      res.statusCode = req.url?.includes('missing') ? 404 : 200;
      res.end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const other = http.createServer((_req, res) => res.end('{}'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const registry = new Registry();
    const m = kubeMetrics(registry, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const send = (port: number, method: string, path: string) =>
      new Promise<void>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method, path }, (res) => res.resume().on('end', resolve));
        req.on('error', reject);
        req.end();
      });
    try {
      const port = (server.address() as AddressInfo).port;
      await send(port, 'GET', '/api/v1/namespaces/ns/pods');
      await send(port, 'GET', '/api/v1/namespaces/ns/pods?watch=true');
      await send(port, 'PATCH', '/api/v1/namespaces/ns/pods/web/status');
      await send(port, 'GET', '/api/v1/namespaces/ns/pods/missing');
      await send((other.address() as AddressInfo).port, 'GET', '/api/v1/namespaces/ns/pods');
      const got = (await registry.getSingleMetric('inplace_kube_api_requests_total')!.get()).values.map((v) => `${String(v.labels.verb)} ${String(v.labels.code)} ${v.value}`);
      assert.deepEqual(got.sort(), ['get 404 1', 'list 200 1', 'patch 200 1', 'watch 200 1']);
    } finally {
      m.close();
      server.close();
      other.close();
    }
  });
});
