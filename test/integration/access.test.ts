// Who may call the agent over TCP: the real agent process with mutual TLS and an --authz-file, on the
// sandbox's containerd. Callers without a certificate, with one from another CA, with an expired one, and a
// name allowed only to read are refused with the right gRPC code, and no container of the pod changes.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { AgentClient } from '../../src/api/client.js';
import type { ProtoGrpcType } from '../../src/gen/agent.js';
import { loadProto } from '../../src/proto.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { ctl, mtlsProbe, startAgent, type AgentProcess } from '../support/agent-process.js';
import { requireRuntime } from '../support/require-runtime.js';
import { TestCerts, type CertFiles } from '../support/test-certs.js';
import { freePort } from '../support/registry-server.js';
import { runDaemon } from '../support/run-daemon.js';

const env = sandboxEnv();

/** A raw gRPC client with exactly the credentials given (no client-side checks), for TLS-level refusals. */
function rawClient(address: string, ca: string, leaf?: CertFiles) {
  const proto = grpc.loadPackageDefinition(loadProto('inplace/v1/agent.proto')) as unknown as ProtoGrpcType;
  const creds = grpc.credentials.createSsl(fs.readFileSync(ca), leaf ? fs.readFileSync(leaf.key) : null, leaf ? fs.readFileSync(leaf.cert) : null);
  return new proto.inplace.v1.Agent(address, creds);
}

/** The status a raw Restart call ends with. */
function rawRestart(address: string, ca: string, leaf: CertFiles | undefined, pod: string): Promise<grpc.ServiceError | null> {
  const c = rawClient(address, ca, leaf);
  return new Promise((resolve) => {
    c.Restart({ pod, containers: ['app'] }, { deadline: Date.now() + 10_000 }, (err) => {
      c.close();
      resolve(err);
    });
  });
}

describe('agent access over TCP (mutual TLS, --authz-file)', function () {
  this.timeout(120_000);
  let rt: CriRuntime;
  let fixture: CriPodFixture;
  let agent: AgentProcess;
  let pod: TestPod;
  let dir: string;
  let address: string;
  let metricsPort: number;
  let ca: CertFiles;
  let server: CertFiles;
  let deployer: CertFiles;
  let viewer: CertFiles;
  let foreign: CertFiles;
  let expired: CertFiles;
  let authzFile: string;
  const policy = { read: ['viewer', 'deployer'], pull: ['deployer'], restart: ['spiffe://test/deployer'], cancel: ['deployer'] };

  /** Container ids and states of the pod, to show that nothing happened. */
  const podState = async () =>
    (await rt.listContainers({ podId: pod.podId }))
      .map((c) => `${c.name}:${c.id}:${c.state}`)
      .sort()
      .join(' ');
  const client = (leaf: CertFiles) => new AgentClient(address, 10_000, { ca: ca.cert, cert: leaf.cert, key: leaf.key });
  const tlsArgs = () => ['--tls-cert', server.cert, '--tls-key', server.key, '--client-ca', ca.cert];

  before(async function () {
    rt = new CriRuntime(env.criEndpoint);
    await requireRuntime(this, 'cri', () => rt.version());
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-access-'));
    const certs = new TestCerts(path.join(dir, 'pki'));
    ca = certs.ca('agent-ca');
    const otherCa = certs.ca('other-ca');
    server = certs.leaf('server', ca, 'inplace-agent', { san: ['IP:127.0.0.1', 'DNS:localhost'], usage: 'serverAuth' });
    // The deployer's restart right is granted by its URI SAN, the rest by its CN.
    deployer = certs.leaf('deployer', ca, 'deployer', { san: ['URI:spiffe://test/deployer'], usage: 'clientAuth' });
    viewer = certs.leaf('viewer', ca, 'viewer', { usage: 'clientAuth' });
    // Same names as the deployer, but from a CA the agent does not trust, or no longer valid.
    foreign = certs.leaf('foreign', otherCa, 'deployer', { san: ['URI:spiffe://test/deployer'], usage: 'clientAuth' });
    expired = certs.leaf('expired', ca, 'deployer', { san: ['URI:spiffe://test/deployer'], usage: 'clientAuth', days: -1 });
    authzFile = path.join(dir, 'authz.json');
    fs.writeFileSync(authzFile, JSON.stringify(policy));

    fixture = new CriPodFixture(env.criEndpoint);
    pod = await fixture.create({ name: `access-${process.pid}`, namespace: 'access', containers: [{ name: 'app', image: env.images.appV1 }] });
    address = `127.0.0.1:${await freePort()}`;
    metricsPort = await freePort();
    agent = await startAgent(
      ['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--listen', address, ...tlsArgs(), '--authz-file', authzFile, '--metrics-addr', `127.0.0.1:${metricsPort}`, '--min-ready', '0'],
      { probe: mtlsProbe(address, ca.cert, viewer) },
    );
  });

  after(async () => {
    await agent?.stop();
    if (pod) await fixture?.remove(pod).catch(() => undefined);
    fixture?.close();
    rt?.close();
  });

  describe('refuses to start', () => {
    const base = () => ['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--state-dir', path.join(dir, 'never')];

    it('on TCP without TLS files, naming the missing ones (no plaintext TCP)', async () => {
      const res = await runDaemon([...base(), '--listen', '127.0.0.1:1', '--tls-cert', server.cert]);
      assert.equal(res.code, 1);
      assert.match(res.output, /--listen 127\.0\.0\.1:1 is TCP, which is served with mutual TLS only: .*missing: --tls-key, --client-ca/);
    });

    it('on TCP without --authz-file', async () => {
      const res = await runDaemon([...base(), '--listen', '127.0.0.1:1', ...tlsArgs()]);
      assert.equal(res.code, 1);
      assert.match(res.output, /is TCP: give --authz-file/);
    });

    it('with an --authz-file that does not validate, naming the file and the fault', async () => {
      const bad = path.join(dir, 'bad-authz.json');
      fs.writeFileSync(bad, JSON.stringify({ read: ['viewer'], restrat: ['deployer'] }));
      const res = await runDaemon([...base(), '--listen', '127.0.0.1:1', ...tlsArgs(), '--authz-file', bad]);
      assert.equal(res.code, 1);
      assert.match(res.output, new RegExp(`--authz-file ${bad.replace(/[.]/g, '\\.')}: unknown key "restrat"; the keys are read, pull, restart, cancel`));
    });

    it('with a key that is not the certificate\'s', async () => {
      const res = await runDaemon([...base(), '--listen', '127.0.0.1:1', '--tls-cert', server.cert, '--tls-key', viewer.key, '--client-ca', ca.cert, '--authz-file', authzFile]);
      assert.equal(res.code, 1);
      assert.match(res.output, /--tls-key .*viewer\.key is not the private key of --tls-cert/);
    });
  });

  it('serves a caller with a certificate from the CA and a listed name', async () => {
    const c = client(viewer);
    try {
      const res = await c.listPods();
      assert.ok(res.pods.some((p) => p.id === pod.podId), `pod ${pod.name} listed: ${JSON.stringify(res.pods.map((p) => [p.id, p.namespace, p.name]))}`);
    } finally {
      c.close();
    }
  });

  const tlsRefusals: Array<[string, () => CertFiles | undefined]> = [
    ['no client certificate', () => undefined],
    ['a certificate from another CA', () => foreign],
    ['an expired certificate', () => expired],
  ];
  for (const [what, leaf] of tlsRefusals) {
    it(`refuses ${what} in the TLS handshake (UNAVAILABLE); the pod is untouched`, async () => {
      const before = await podState();
      const err = await rawRestart(address, ca.cert, leaf(), pod.name);
      assert.ok(err, 'the call failed');
      assert.equal(err.code, grpc.status.UNAVAILABLE, `code ${err.code}: ${err.details}`);
      assert.equal(await podState(), before, 'container ids and states unchanged');
      const ops = client(viewer);
      try {
        assert.deepEqual(await ops.listOperations(pod.name), [], 'no operation recorded');
      } finally {
        ops.close();
      }
    });
  }

  it('refuses a name allowed only to read (PERMISSION_DENIED), logs the caller and counts it; the pod is untouched', async () => {
    const before = await podState();
    const err = await rawRestart(address, ca.cert, viewer, pod.name);
    assert.ok(err, 'the call failed');
    assert.equal(err.code, grpc.status.PERMISSION_DENIED, `code ${err.code}: ${err.details}`);
    assert.match(err.details, /caller "viewer" may not restart \(Restart needs the "restart" permission/);
    assert.equal(await podState(), before, 'container ids and states unchanged');

    const c = client(viewer);
    try {
      await assert.rejects(c.cancelOperation('op-x'), (e: Error & { kind?: string }) => e.kind === 'PermissionDenied' && /may not cancel/.test(e.message));
      await assert.rejects(c.pullImages({ images: [env.images.appV2] }).next(), (e: Error & { kind?: string }) => e.kind === 'PermissionDenied');
      assert.deepEqual(await c.listOperations(pod.name), [], 'no operation recorded');
    } finally {
      c.close();
    }
    assert.match(agent.log(), /call refused component=access caller="viewer" method=\/inplace\.v1\.Agent\/Restart needs=restart/);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    assert.match(metrics, /inplace_agent_api_denied_total\{method="Restart",permission="restart"\} 1\b/);
    assert.match(metrics, /inplace_agent_api_denied_total\{method="CancelOperation",permission="cancel"\} 1\b/);
  });

  it('inplacectl: --cert/--key/--ca required for TCP; a read-only name cannot restart; an allowed one can', async () => {
    const before = await podState();
    const none = await ctl(address, 'restart', pod.name, 'app');
    assert.equal(none.code, 2, none.stderr);
    assert.match(none.stderr, /reached over TCP, which needs mutual TLS: give --ca, --cert and --key/);

    const asViewer = await ctl(address, '--ca', ca.cert, '--cert', viewer.cert, '--key', viewer.key, 'restart', pod.name, 'app');
    assert.equal(asViewer.code, 1, asViewer.stderr);
    assert.match(asViewer.stderr, /caller "viewer" may not restart/);
    assert.equal(await podState(), before, 'container ids and states unchanged');

    const expiredCtl = await ctl(address, '--ca', ca.cert, '--cert', expired.cert, '--key', expired.key, 'pods');
    assert.equal(expiredCtl.code, 2);
    assert.match(expiredCtl.stderr, /--cert .*expired\.crt expired on/);

    const oldApp = (await rt.listContainers({ podId: pod.podId })).find((c) => c.name === 'app' && c.state === 'running');
    const asDeployer = await ctl(address, '--ca', ca.cert, '--cert', deployer.cert, '--key', deployer.key, '--server-name', 'localhost', 'restart', pod.name, 'app');
    assert.equal(asDeployer.code, 0, `${asDeployer.stdout}${asDeployer.stderr}\n${agent.log()}`);
    const newApp = (await rt.listContainers({ podId: pod.podId })).find((c) => c.name === 'app' && c.state === 'running');
    assert.ok(newApp && oldApp && newApp.id !== oldApp.id, 'the allowed caller restarted app');
  });

  it('reloads --authz-file on SIGHUP; an invalid file leaves the policy in force', async () => {
    fs.writeFileSync(authzFile, '{"read": ["viewer"], ');
    agent.child.kill('SIGHUP');
    await waitFor(() => /authorization policy not reloaded; the previous one stays in force/.test(agent.log()));
    const c = client(viewer);
    try {
      await assert.rejects(c.restart({ pod: pod.name, containers: ['app'], dryRun: true }), /may not restart/);
      fs.writeFileSync(authzFile, JSON.stringify({ ...policy, restart: ['viewer'] }));
      agent.child.kill('SIGHUP');
      await waitFor(() => /authorization policy reloaded/.test(agent.log()));
      const plan = await c.restart({ pod: pod.name, containers: ['app'], dryRun: true });
      assert.equal(plan.podId, pod.podId, 'the reloaded policy lets viewer restart');
    } finally {
      c.close();
    }
    const d = client(deployer);
    try {
      await assert.rejects(d.restart({ pod: pod.name, containers: ['app'], dryRun: true }), /caller "deployer", "spiffe:\/\/test\/deployer" may not restart/);
    } finally {
      d.close();
    }
    assert.ok(agent.child.exitCode === null, 'SIGHUP does not end the agent');
  });
});

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
