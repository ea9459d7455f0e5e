import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig } from '../../src/k8s/client.js';
import { keepConnections } from '../../src/k8s/keep-alive.js';
import { kubeConfigFrom } from '../../src/k8s/kubeconfig.js';
import { TestCerts } from '../support/test-certs.js';

describe('kube: API calls over kept connections', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-keep-alive-'));
  let server: https.Server;
  let connections = 0;
  let caFile = '';
  let kubeconfig = '';

  before(async () => {
    const certs = new TestCerts(dir);
    const ca = certs.ca('ca');
    const leaf = certs.leaf('server', ca, 'apiserver', { san: ['IP:127.0.0.1'], usage: 'serverAuth' });
    caFile = ca.cert;
    // A stand-in API server that answers every GET of a namespace.
    server = https.createServer({ cert: fs.readFileSync(leaf.cert), key: fs.readFileSync(leaf.key) }, (req, res) => {
      const name = req.url?.split('/').pop() ?? '';
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }));
    });
    server.on('secureConnection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    kubeconfig = path.join(dir, 'config');
    fs.writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{ name: c, cluster: { server: "https://127.0.0.1:${port}", certificate-authority: "${caFile}" } }]`,
        'users: [{ name: u, user: { token: t0ken } }]',
        'contexts: [{ name: x, context: { cluster: c, user: u } }]',
        'current-context: x',
        '',
      ].join('\n'),
    );
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const calls = async (kc: KubeConfig, n: number) => {
    const core = kc.makeApiClient(CoreV1Api);
    for (let i = 0; i < n; i++) assert.equal((await core.readNamespace({ name: `ns${i}` })).metadata?.name, `ns${i}`);
  };

  it('the library alone opens a TLS connection per call (what keepConnections is for)', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    connections = 0;
    await calls(kc, 4);
    assert.equal(connections, 4);
  });

  it("the agent's configuration makes its calls over one connection, its TLS checks kept", async () => {
    connections = 0;
    await calls(kubeConfigFrom({ kind: 'file', file: kubeconfig }), 5);
    assert.equal(connections, 1);
    // The server's certificate is still checked: a configuration without its CA is refused.
    const wrong = keepConnections(new KubeConfig());
    wrong.loadFromString(fs.readFileSync(kubeconfig, 'utf8').replace(`certificate-authority: "${caFile}"`, 'insecure-skip-tls-verify: false'));
    await assert.rejects(calls(wrong, 1), /certificate/);
  });

  it('a changed TLS option (a rotated CA, say) gets a new connection', async () => {
    const kc = kubeConfigFrom({ kind: 'file', file: kubeconfig });
    connections = 0;
    await calls(kc, 2);
    // The same CA, as another file's bytes (a trailing newline): compared by content, so another agent.
    const other = path.join(dir, 'ca-again.crt');
    fs.writeFileSync(other, `${fs.readFileSync(caFile, 'utf8')}\n`);
    (kc.getCurrentCluster() as { caFile?: string }).caFile = other;
    await calls(kc, 2);
    assert.equal(connections, 2);
  });
});
