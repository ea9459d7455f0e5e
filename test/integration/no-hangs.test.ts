// No hangs: a runtime socket, an agent socket or an API server that accepts connections and never answers fails the
// command within its deadline, with one line naming what did not answer and the flag that bounds the wait. Local
// listeners only (a mute unix socket, a silent HTTP listener, a silent TLS port on 127.0.0.1): no runtime, no cluster.
// The daemon's later runtime calls and its watches of the API server are held to their deadlines the same way.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, type KubernetesListObject, type KubernetesObject } from '../../src/k8s/client.js';
import { systemClock } from '../../src/clock.js';
import { AgentError } from '../../src/errors.js';
import { Follower, followerDeps, type FollowFailure } from '../../src/k8s/list-follower.js';
import { limitRequests } from '../../src/k8s/request-deadline.js';
import { withCallDeadlines } from '../../src/runtime/call-deadline.js';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
const CTL = path.join(dist, 'cli/main.js');
const PLUGIN = path.join(dist, 'cli/kubectl-inplace.js');
const AGENT = path.join(dist, 'daemon/main.js');

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs a program to its end (killed after 30 s, which fails the test), timing it. */
function run(file: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file, ...args], { env: { PATH: process.env.PATH, HOME: '/nonexistent', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (status) => {
      clearTimeout(killer);
      resolve({ status, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

/** The non-empty lines of a stream. */
const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');

/** A kubeconfig for server, with context `mute` in namespace shop. */
function kubeconfig(server: string): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: mute
  cluster: { server: "${server}", insecure-skip-tls-verify: true }
users:
- name: u
  user: { token: t0ken }
contexts:
- name: mute
  context: { cluster: mute, user: u, namespace: shop }
current-context: ""
`;
}

describe('no hangs: what accepts and never answers fails within its deadline, in one line', function () {
  this.timeout(60_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'no-hangs-'));
  const muteSock = path.join(dir, 'mute.sock');
  const held: net.Socket[] = [];
  // Accepts, reads, never writes.
  const mute = net.createServer((s) => held.push(s));
  const tlsMute = net.createServer((s) => held.push(s));
  // Takes the request and never replies.
  const silentHttp = http.createServer(() => undefined);
  let httpConfig = '';
  let httpsConfig = '';

  before(async () => {
    await new Promise<void>((r) => mute.listen(muteSock, r));
    await new Promise<void>((r) => tlsMute.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => silentHttp.listen(0, '127.0.0.1', r));
    httpConfig = path.join(dir, 'http.kubeconfig');
    httpsConfig = path.join(dir, 'https.kubeconfig');
    fs.writeFileSync(httpConfig, kubeconfig(`http://127.0.0.1:${(silentHttp.address() as net.AddressInfo).port}`));
    fs.writeFileSync(httpsConfig, kubeconfig(`https://127.0.0.1:${(tlsMute.address() as net.AddressInfo).port}`));
  });

  after(() => {
    for (const s of held) s.destroy();
    silentHttp.closeAllConnections();
    for (const srv of [mute, tlsMute, silentHttp]) srv.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const [runtime, flag] of [
    ['docker', '--docker-host'],
    ['cri', '--cri-endpoint'],
  ] as const) {
    it(`inplace-agent --runtime ${runtime} fails a mute runtime socket after --runtime-timeout, naming it`, async () => {
      const state = fs.mkdtempSync(path.join(dir, `agent-${runtime}-`));
      const res = await run(AGENT, ['--runtime', runtime, flag, `unix://${muteSock}`, '--runtime-timeout', '1s', '--listen', `unix://${state}/agent.sock`, '--state-dir', `${state}/state`]);
      assert.equal(res.status, 1, res.stderr);
      assert.ok(res.ms < 8000, `took ${res.ms} ms`);
      assert.deepEqual(lines(res.stderr).length, 1, res.stderr);
      assert.match(res.stderr, new RegExp(`inplace-agent cannot start: container runtime at unix://${muteSock.replace(/[.]/g, '\\.')} accepted the connection but did not answer within 1s \\(--runtime-timeout\\)`));
      assert.doesNotMatch(res.stderr, /LB pick|Deadline exceeded after/);
    });
  }

  for (const runtime of ['docker', 'cri'] as const) {
    it(`the daemon's later ${runtime} calls on a runtime gone mute fail by their deadline, naming the call and the socket`, async () => {
      const rt = runtime === 'docker' ? new (await import('../../src/runtime/docker/docker-runtime.js')).DockerRuntime(`unix://${muteSock}`) : new (await import('../../src/runtime/cri/cri-runtime.js')).CriRuntime(`unix://${muteSock}`);
      const bounded = withCallDeadlines(rt, `unix://${muteSock}`, 500, systemClock);
      try {
        for (const [call, limit, p] of [
          ['listContainers', '0.5s', () => bounded.listContainers()],
          ['inspectContainer', '0.5s', () => bounded.inspectContainer('abc')],
          ['stopContainer', '1.5s', () => bounded.stopContainer('abc', 1)],
        ] as const) {
          const t0 = Date.now();
          await assert.rejects(p(), (err: Error) => {
            assert.ok(AgentError.is(err, 'DeadlineExceeded'), String(err));
            assert.equal(err.message, `container runtime at unix://${muteSock} did not answer ${call} within ${limit}`);
            return true;
          });
          assert.ok(Date.now() - t0 < 5000, `${call} took ${Date.now() - t0} ms`);
        }
      } finally {
        rt.close();
      }
    });
  }

  it("the agent's API requests to a silent API server are aborted by their deadline", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(httpConfig);
    kc.setCurrentContext('mute');
    let told = 0;
    limitRequests(kc, 500, () => told++);
    const t0 = Date.now();
    await assert.rejects(kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'shop' }), (err: Error) => {
      assert.match(`${err.name} ${err.message}`, /abort/i);
      return true;
    });
    assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
    assert.equal(told, 1);
  });

  it("the agent's API requests that are answered are neither aborted nor reported when their deadline passes", async () => {
    // An API server that answers every request at once, and one that sends its headers but holds the body 700 ms.
    const answering = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '1' }, items: [] });
      if (req.url?.includes('/slow/')) setTimeout(() => res.end(body), 700).unref();
      else res.end(body);
    });
    await new Promise<void>((r) => answering.listen(0, '127.0.0.1', r));
    try {
      const kc = new KubeConfig();
      kc.loadFromString(kubeconfig(`http://127.0.0.1:${(answering.address() as net.AddressInfo).port}`));
      kc.setCurrentContext('mute');
      let told = 0;
      limitRequests(kc, 300, () => told++);
      const core = kc.makeApiClient(CoreV1Api);
      for (let i = 0; i < 20; i++) assert.equal((await core.listNamespacedPod({ namespace: 'shop' })).kind, 'PodList');
      await new Promise((r) => setTimeout(r, 600));
      assert.equal(told, 0, 'no answered request was reported after its deadline');
      // A body still coming when the deadline passes is a request not answered: aborted and reported.
      await assert.rejects(core.listNamespacedPod({ namespace: 'slow' }), (err: Error) => /abort/i.test(`${err.name} ${err.message}`));
      assert.equal(told, 1);
    } finally {
      answering.closeAllConnections();
      answering.close();
    }
  });

  it("the agent's follower of the API server: a watch the server never answers ends by its deadline and is made again", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(httpConfig);
    kc.setCurrentContext('mute');
    const failures: FollowFailure[] = [];
    const list = (): Promise<KubernetesListObject<KubernetesObject>> => Promise.resolve({ apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '5' }, items: [] });
    const t0 = Date.now();
    const f = new Follower<KubernetesObject>(followerDeps(kc, systemClock), { path: '/api/v1/pods', list, initialBackoffMs: 100, watchDeadline: { timeoutSeconds: 1, graceMs: 500 } }, { failed: (x) => failures.push(x) }).start();
    try {
      while (failures.length < 2 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 50));
      assert.equal(failures.length, 2, 'two watches ended by their deadline');
      for (const x of failures) assert.match(String((x.error as Error).message), /^watch of \/api\/v1\/pods: nothing from the API server for 1\.5s/);
      assert.ok(Date.now() - t0 < 6000, `took ${Date.now() - t0} ms`);
    } finally {
      await f.stop();
    }
  });

  for (const args of [['pods'], ['pull', '127.0.0.1:5000/x:1'], ['get', 'abcdef12']]) {
    it(`inplacectl ${args[0]} fails a mute agent socket after --request-timeout, exit 1`, async () => {
      const res = await run(CTL, ['--agent', `unix://${muteSock}`, '--request-timeout', '1s', ...args]);
      assert.equal(res.status, 1, res.stderr);
      assert.ok(res.ms < 8000, `took ${res.ms} ms`);
      assert.deepEqual(lines(res.stderr), [`inplacectl: the agent at unix://${muteSock} accepted the connection but did not answer within 1s (--request-timeout)`]);
    });
  }

  it('inplacectl version prints the client version, then says the mute agent did not answer', async () => {
    const res = await run(CTL, ['--agent', `unix://${muteSock}`, '--request-timeout', '1s', 'version']);
    assert.equal(res.status, 1, res.stderr);
    assert.match(res.stdout, /^Client Version: \d+\.\d+\.\d+\n$/);
    assert.match(res.stderr, /^inplacectl: cannot get the agent's version: the agent at .* did not answer within 1s \(--request-timeout\)\n$/);
  });

  it('kubectl inplace pods fails a silent API server after --request-timeout, over http and https, exit 1', async () => {
    for (const [config, scheme] of [
      [httpConfig, 'http'],
      [httpsConfig, 'https'],
    ] as const) {
      const res = await run(PLUGIN, ['--kubeconfig', config, '--context', 'mute', '--request-timeout', '1s', 'pods']);
      assert.equal(res.status, 1, `${scheme}: ${res.stderr}`);
      assert.ok(res.ms < 8000, `${scheme}: took ${res.ms} ms`);
      assert.match(res.stderr, new RegExp(`^kubectl inplace: the Kubernetes API server at ${scheme}://127\\.0\\.0\\.1:\\d+ did not answer within 1s \\(--request-timeout\\)\\n$`), scheme);
    }
  });

  it('inplacectl finds the silent API server as kubectl would ($KUBECONFIG, --context) and fails it in one line, -o json too', async () => {
    const res = await run(CTL, ['--context', 'mute', '--request-timeout', '1s', 'rollout', 'status', 'r'], { KUBECONFIG: `${path.join(dir, 'none')}:${httpConfig}` });
    assert.equal(res.status, 1, res.stderr);
    assert.match(res.stderr, /^inplacectl: the Kubernetes API server at http:\/\/127\.0\.0\.1:\d+ did not answer within 1s \(--request-timeout\)\n$/);
    const json = await run(CTL, ['--kubeconfig', httpConfig, '--context', 'mute', '--request-timeout', '1s', '-o=json', 'restart', 'web-0', 'app']);
    assert.equal(json.status, 1, json.stderr);
    const doc = JSON.parse(json.stdout) as { errorKind: string; exitCode: number; error: string };
    assert.deepEqual([doc.errorKind, doc.exitCode], ['DeadlineExceeded', 1]);
    assert.match(doc.error, /did not answer within 1s \(--request-timeout\)$/);
  });

  it('with --context and no current context, ~/.kube/config is read when $KUBECONFIG is unset', async () => {
    const home = path.join(dir, 'home');
    fs.mkdirSync(path.join(home, '.kube'), { recursive: true });
    fs.copyFileSync(httpConfig, path.join(home, '.kube', 'config'));
    const res = await run(CTL, ['--context', 'mute', '--request-timeout', '1s', 'prewarm', 'delete', 'p'], { HOME: home });
    assert.equal(res.status, 1, res.stderr);
    assert.match(res.stderr, /^inplacectl: the Kubernetes API server at http:\/\/127\.0\.0\.1:\d+ did not answer within 1s/);
  });
});
