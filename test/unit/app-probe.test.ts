import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { appProbe } from '../../src/kube/kubelet/app-probe.js';
import type { V1Pod, V1Probe } from '../../src/k8s/client.js';

const pod = (probe: V1Probe | undefined, podIP = '127.0.0.1'): V1Pod => ({
  metadata: { name: 'web' },
  spec: { containers: [{ name: 'app', image: 'app:v1', ports: [{ name: 'http', containerPort: 1 }], readinessProbe: probe }] },
  status: { podIP },
});

describe("kube: the new instance's readiness probe, as the agent runs it", () => {
  let server: http.Server;
  let port = 0;
  let closed = 0;
  before(async () => {
    server = http.createServer((req, res) => {
      res.statusCode = req.url === '/ok' && req.headers['x-probe'] === 'yes' ? 200 : req.url === '/moved' ? 302 : 503;
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    // A port nothing listens on: one just freed.
    const spare = http.createServer();
    await new Promise<void>((r) => spare.listen(0, '127.0.0.1', r));
    closed = (spare.address() as AddressInfo).port;
    await new Promise((r) => spare.close(r));
  });
  after(() => new Promise((r) => server.close(r)));

  it('httpGet passes on 200-399 with its headers, fails on 503 and on a closed port, as the kubelet judges', async () => {
    const get = (path: string, p: number | string, headers = [{ name: 'X-Probe', value: 'yes' }]) => appProbe(pod({ httpGet: { path, port: p, httpHeaders: headers } }), 'app')!();
    assert.equal(await get('/ok', port), true);
    assert.equal(await get('/moved', port), true, 'a redirect passes, not followed');
    assert.equal(await get('/ok', port, []), false, 'without its header the server answers 503');
    assert.equal(await get('/down', port), false);
    assert.equal(await get('/ok', closed), false);
  });

  it('a named port is the container port of that name; tcpSocket passes once a connection opens', async () => {
    const named = pod({ httpGet: { path: '/ok', port: 'http', httpHeaders: [{ name: 'X-Probe', value: 'yes' }] } });
    named.spec!.containers[0].ports![0].containerPort = port;
    assert.equal(await appProbe(named, 'app')!(), true);
    assert.equal(await appProbe(pod({ tcpSocket: { port } }), 'app')!(), true);
    assert.equal(await appProbe(pod({ tcpSocket: { port: closed } }), 'app')!(), false);
  });

  it('none for exec and grpc probes, a container without a probe, an unknown port name, or a pod without an address', () => {
    assert.equal(appProbe(pod({ exec: { command: ['true'] } }), 'app'), undefined);
    assert.equal(appProbe(pod({ grpc: { port } }), 'app'), undefined);
    assert.equal(appProbe(pod(undefined), 'app'), undefined);
    assert.equal(appProbe(pod({ httpGet: { path: '/', port: 'nope' } }), 'app'), undefined);
    assert.equal(appProbe(pod({ tcpSocket: { port } }, ''), 'app'), undefined);
    assert.equal(appProbe(pod({ tcpSocket: { port } }), 'other'), undefined);
  });
});
