// gRPC server reflection, checked with the real grpcurl (scripts/build-deps grpcurl) and no .proto file:
// `list`, `describe inplace.v1.Agent` and a ListPods call work on the agent's unix socket and on its TCP
// listener with mutual TLS; evans (scripts/build-deps evans) lists, describes and calls in its CLI mode too; reflection keeps the API's access rules (the socket's mode refuses other users;
// on TCP a certificate without the "read" permission, or no certificate at all, cannot list).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { mtlsProbe, startAgent, type AgentProcess } from '../support/agent-process.js';
import { evansUnix, grpcCliPath, runGrpcCli } from '../support/grpc-cli.js';
import { freePort } from '../support/registry-server.js';
import { requireRuntime } from '../support/require-runtime.js';
import { TestCerts, type CertFiles } from '../support/test-certs.js';

const env = sandboxEnv();
/** The group given the agent's socket: its members (and root) may use the agent. */
const SOCKET_GID = 4321;

/** The pod ids in a ListPods reply as grpcurl prints it (JSON). */
function podIds(stdout: string): string[] {
  const reply = JSON.parse(stdout) as { pods?: { id: string }[]; runtime?: string };
  return (reply.pods ?? []).map((p) => p.id);
}

describe('gRPC server reflection (grpcurl, no .proto files)', function () {
  this.timeout(120_000);
  let bin: string;
  let rt: CriRuntime;
  let fixture: CriPodFixture;
  let pod: TestPod;
  let dir: string;

  before(async function () {
    await requireRuntime(this, 'grpcurl', async () => {
      bin = grpcCliPath('grpcurl');
      if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run scripts/build-deps grpcurl`);
    });
    rt = new CriRuntime(env.criEndpoint);
    await requireRuntime(this, 'cri', () => rt.version());
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-reflection-'));
    fixture = new CriPodFixture(env.criEndpoint);
    pod = await fixture.create({ name: `reflect-${process.pid}`, namespace: 'reflection', containers: [{ name: 'app', image: env.images.appV1 }] });
  });

  after(async () => {
    if (pod) await fixture?.remove(pod).catch(() => undefined);
    fixture?.close();
    rt?.close();
  });

  describe('on the unix socket', () => {
    let agent: AgentProcess;
    const unix = (...args: string[]) => ['-plaintext', '-unix', ...args];

    before(async () => {
      agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--socket-group', String(SOCKET_GID)]);
    });
    after(async () => {
      await agent?.stop();
    });

    it('grpcurl list names the agent and health services', async () => {
      const res = await runGrpcCli(bin, unix(agent.socket, 'list'));
      assert.equal(res.code, 0, res.stderr);
      assert.deepEqual(res.stdout.trim().split('\n').sort(), ['grpc.health.v1.Health', 'inplace.v1.Agent']);
    });

    it('grpcurl describe inplace.v1.Agent shows every RPC; a message with a map is described as the .proto has it', async () => {
      const res = await runGrpcCli(bin, unix(agent.socket, 'describe', 'inplace.v1.Agent'));
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^inplace\.v1\.Agent is a service:/);
      for (const rpc of ['ListPods', 'PullImages', 'Restart', 'GetOperation', 'ListOperations', 'WatchOperation', 'CancelOperation', 'Version']) {
        assert.match(res.stdout, new RegExp(`rpc ${rpc} \\(`), `${rpc} described:\n${res.stdout}`);
      }
      const msg = await runGrpcCli(bin, unix(agent.socket, 'describe', 'inplace.v1.RestartRequest'));
      assert.equal(msg.code, 0, msg.stderr);
      assert.match(msg.stdout, /map<string, string> images = 3;/);
      assert.match(msg.stdout, /uint32 grace_seconds = 4;/);
    });

    it('a ListPods call made with reflection only lists the test pod', async () => {
      const res = await runGrpcCli(bin, unix('-d', '{}', agent.socket, 'inplace.v1.Agent/ListPods'));
      assert.equal(res.code, 0, res.stderr);
      assert.ok(podIds(res.stdout).includes(pod.podId), `pod ${pod.podId} listed:\n${res.stdout.slice(0, 2000)}`);
      assert.equal((JSON.parse(res.stdout) as { runtime: string }).runtime, 'cri');
    });

    it('a call with fields set by their .proto names (a map included) reaches the agent: a dry run plans the image change, touching nothing', async () => {
      const before = (await rt.listContainers({ podId: pod.podId })).map((c) => `${c.id}:${c.state}`).sort();
      const req = JSON.stringify({ pod: pod.podId, containers: ['app'], images: { app: env.images.appV2 }, grace_seconds: 3, grace_set: true, dry_run: true });
      const res = await runGrpcCli(bin, unix('-d', req, agent.socket, 'inplace.v1.Agent/Restart'));
      assert.equal(res.code, 0, res.stderr);
      const op = JSON.parse(res.stdout) as { pod_id: string; containers: { name: string; new_image: string }[]; requested: { grace_seconds: number } };
      assert.equal(op.pod_id, pod.podId);
      assert.deepEqual(op.containers.map((c) => [c.name, c.new_image]), [['app', env.images.appV2]]);
      assert.equal(op.requested.grace_seconds, 3);
      assert.deepEqual((await rt.listContainers({ podId: pod.podId })).map((c) => `${c.id}:${c.state}`).sort(), before, 'the dry run changed no container');
    });

    it('the socket\'s mode and group decide who may reflect (run as root: grpcurl runs as nobody, without and with the group)', async () => {
      // The socket's directory open to all, so that only the socket's own mode (0660) and group decide.
      fs.chmodSync(path.dirname(agent.socket), 0o755);
      const nobody = ['setpriv', '--reuid=65534', '--regid=65534'];
      const refused = await runGrpcCli(bin, unix('-connect-timeout', '2', agent.socket, 'list'), { prefix: [...nobody, '--clear-groups'] });
      assert.notEqual(refused.code, 0, refused.stdout);
      assert.equal(refused.stdout, '');
      assert.match(refused.stderr, /Failed to dial target host/);
      const member = await runGrpcCli(bin, unix(agent.socket, 'list'), { prefix: [...nobody, `--groups=${SOCKET_GID}`] });
      assert.equal(member.code, 0, member.stderr);
      assert.match(member.stdout, /^inplace\.v1\.Agent$/m);
    });

    describe('evans (CLI mode)', () => {
      let evans: string;
      before(async function () {
        await requireRuntime(this, 'evans', async () => {
          evans = grpcCliPath('evans');
          if (!fs.existsSync(evans)) throw new Error(`${evans} is missing: run scripts/build-deps evans`);
        });
      });

      it('lists the services and the Agent\'s methods, and describes a message, with reflection only', async () => {
        const services = await runGrpcCli(evans, [...evansUnix(agent.socket), 'cli', 'list']);
        assert.equal(services.code, 0, services.stderr);
        assert.deepEqual(services.stdout.trim().split('\n').sort(), ['grpc.health.v1.Health', 'inplace.v1.Agent']);
        const methods = await runGrpcCli(evans, [...evansUnix(agent.socket), 'cli', 'list', 'inplace.v1.Agent']);
        assert.equal(methods.code, 0, methods.stderr);
        for (const rpc of ['ListPods', 'Restart', 'WatchOperation', 'Version']) {
          assert.match(methods.stdout, new RegExp(`^inplace\\.v1\\.Agent\\.${rpc}$`, 'm'), methods.stdout);
        }
        const msg = await runGrpcCli(evans, [...evansUnix(agent.socket), 'cli', 'desc', 'inplace.v1.RestartRequest']);
        assert.equal(msg.code, 0, msg.stderr);
        assert.match(msg.stdout, /map<string, string> images = 3;/);
      });

      it('calls ListPods from a request file and gets the test pod back', async () => {
        const req = path.join(dir, 'evans-listpods.json');
        fs.writeFileSync(req, '{}');
        const res = await runGrpcCli(evans, [...evansUnix(agent.socket), 'cli', 'call', '--file', req, '--output', 'json', 'inplace.v1.Agent.ListPods']);
        assert.equal(res.code, 0, res.stderr);
        // `--output json` wraps the replies with the call's status: {status: {number, ...}, messages: [reply]}.
        const out = JSON.parse(res.stdout) as { status: { number: number }; messages: unknown[] };
        assert.equal(out.status.number, 0, res.stdout.slice(0, 500));
        assert.equal(out.messages.length, 1);
        const reply = JSON.stringify(out.messages[0]);
        assert.ok(podIds(reply).includes(pod.podId), `pod ${pod.podId} listed:\n${reply.slice(0, 2000)}`);
        assert.equal((out.messages[0] as { runtime: string }).runtime, 'cri');
      });
    });
  });

  describe('on TCP with mutual TLS and --authz-file', () => {
    let agent: AgentProcess;
    let address: string;
    let metricsPort: number;
    let ca: CertFiles;
    let reader: CertFiles;
    let stranger: CertFiles;
    const tls = (leaf?: CertFiles) => ['-cacert', ca.cert, ...(leaf ? ['-cert', leaf.cert, '-key', leaf.key] : [])];

    before(async () => {
      const certs = new TestCerts(path.join(dir, 'pki'));
      ca = certs.ca('agent-ca');
      const server = certs.leaf('server', ca, 'inplace-agent', { san: ['IP:127.0.0.1', 'DNS:localhost'], usage: 'serverAuth' });
      reader = certs.leaf('reader', ca, 'reader', { usage: 'clientAuth' });
      // From the trusted CA, so it passes the handshake, but named nowhere in the policy.
      stranger = certs.leaf('stranger', ca, 'stranger', { usage: 'clientAuth' });
      const authzFile = path.join(dir, 'authz.json');
      fs.writeFileSync(authzFile, JSON.stringify({ read: ['reader'] }));
      address = `127.0.0.1:${await freePort()}`;
      metricsPort = await freePort();
      const tlsArgs = ['--tls-cert', server.cert, '--tls-key', server.key, '--client-ca', ca.cert, '--authz-file', authzFile];
      agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--listen', address, ...tlsArgs, '--metrics-addr', `127.0.0.1:${metricsPort}`], { probe: mtlsProbe(address, ca.cert, reader) });
    });
    after(async () => {
      await agent?.stop();
    });

    it('a caller with "read" can list, describe and call ListPods with reflection only', async () => {
      const list = await runGrpcCli(bin, [...tls(reader), address, 'list']);
      assert.equal(list.code, 0, list.stderr);
      assert.deepEqual(list.stdout.trim().split('\n').sort(), ['grpc.health.v1.Health', 'inplace.v1.Agent']);
      const describe = await runGrpcCli(bin, [...tls(reader), address, 'describe', 'inplace.v1.Agent']);
      assert.equal(describe.code, 0, describe.stderr);
      assert.match(describe.stdout, /rpc ListPods \( \.inplace\.v1\.ListPodsRequest \) returns \( \.inplace\.v1\.ListPodsResponse \);/);
      const pods = await runGrpcCli(bin, [...tls(reader), '-d', '{}', address, 'inplace.v1.Agent/ListPods']);
      assert.equal(pods.code, 0, pods.stderr);
      assert.ok(podIds(pods.stdout).includes(pod.podId), `pod ${pod.podId} listed:\n${pods.stdout.slice(0, 2000)}`);
    });

    it('evans with the reader\'s certificate lists the Agent\'s methods over mutual TLS', async function () {
      let evans = '';
      await requireRuntime(this, 'evans', async () => {
        evans = grpcCliPath('evans');
        if (!fs.existsSync(evans)) throw new Error(`${evans} is missing: run scripts/build-deps evans`);
      });
      const [host, port] = address.split(':');
      const res = await runGrpcCli(evans, ['--host', host!, '--port', port!, '--tls', '--cacert', ca.cert, '--cert', reader.cert, '--certkey', reader.key, '-r', 'cli', 'list', 'inplace.v1.Agent']);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^inplace\.v1\.Agent\.ListPods$/m);
    });

    it('a certificate without "read" cannot list: PermissionDenied, logged and counted', async () => {
      const res = await runGrpcCli(bin, [...tls(stranger), address, 'list']);
      assert.notEqual(res.code, 0, res.stdout);
      assert.equal(res.stdout, '');
      assert.match(res.stderr, /PermissionDenied/);
      assert.match(res.stderr, /caller "stranger" may not read \(ServerReflectionInfo needs the "read" permission/);
      assert.match(agent.log(), /call refused component=access caller="stranger" method=\/grpc\.reflection\.v1\.ServerReflection\/ServerReflectionInfo needs=read/);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      assert.match(metrics, /inplace_agent_api_denied_total\{method="ServerReflectionInfo",permission="read"\} [1-9]/);
    });

    it('no client certificate: refused in the TLS handshake, nothing listed', async () => {
      const res = await runGrpcCli(bin, [...tls(), address, 'list']);
      assert.notEqual(res.code, 0, res.stdout);
      assert.equal(res.stdout, '');
      assert.match(res.stderr, /certificate required|bad certificate|handshake|tls/i);
    });
  });
});
