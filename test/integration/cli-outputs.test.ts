// inplacectl as a new user meets it, against a real agent on the sandbox's containerd 1.6 (CRI): progress that
// prints every journaled step once and in order, a watch that replays what happened before it joined, a
// cancel during verification printed as what happened, one-sentence failures, JSON that invents nothing,
// an unknown pod named as such, containers in a stable order, the agent's version, and a reader that goes away.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { AgentClient } from '../../src/api/client.js';
import { stepText } from '../../src/cli/progress.js';
import type { ContainerStep } from '../../src/engine/operation.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { CTL, ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

interface JsonOp {
  id: string;
  state: string;
  finishedAt?: string;
  containers: { name: string; steps: { step: ContainerStep; at: string }[] }[];
}

/** The `NAME: words` progress lines of an inplacectl run, in the order printed. */
function stepLines(stdout: string): { name: string; text: string }[] {
  return [...stdout.matchAll(/^ +[0-9.]+m?s {4}([\w-]+): (.*)$/gm)].map((m) => ({ name: m[1], text: m[2] }));
}

/**
 * Every step of op but Waiting journaled until it ended, in order, as [container, step]. (The old container's
 * removal is journaled after the operation succeeded, when the follower has stopped: `get` shows it.)
 */
function journaled(op: JsonOp): [string, ContainerStep][] {
  const end = op.finishedAt ? Date.parse(op.finishedAt) : Infinity;
  return op.containers.flatMap((c) => c.steps.filter((s) => s.step !== 'Waiting' && Date.parse(s.at) <= end).map((s) => [c.name, s.step] as [string, ContainerStep]));
}

/** Asserts that the printed step lines are the journaled steps, one each, in the same order. */
function assertEveryStepOnce(stdout: string, op: JsonOp): void {
  const printed = stepLines(stdout);
  const want = journaled(op);
  assert.equal(printed.length, want.length, `one line per journaled step:\n${stdout}\njournal: ${JSON.stringify(want)}`);
  want.forEach(([name, step], i) => {
    assert.equal(printed[i].name, name, `line ${i} is about ${name}:\n${stdout}`);
    assert.ok(printed[i].text.startsWith(stepText(step)), `line ${i} is step ${step} ("${printed[i].text}"):\n${stdout}`);
  });
}

describe('inplacectl as a new user meets it (containerd 1.6 CRI, real agent)', function () {
  this.timeout(180_000);
  let rt: CriRuntime;
  let fixture: CriPodFixture;
  let agent: AgentProcess;
  const pods: TestPod[] = [];
  const run = randomBytes(3).toString('hex');

  const pod = async (name: string, containers = ['app']): Promise<TestPod> => {
    const p = await fixture.create({ name: `${name}-${run}`, namespace: 'cliout', containers: containers.map((n) => ({ name: n, image: env.images.appV1 })) });
    pods.push(p);
    return p;
  };

  before(async function () {
    rt = new CriRuntime(env.criEndpoint);
    await requireRuntime(this, 'containerd CRI of the sandbox', () => rt.version());
    fixture = new CriPodFixture(env.criEndpoint);
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--grace', '2s', '--min-ready', '0']);
  });

  after(async () => {
    await agent?.stop();
    for (const p of pods) await fixture?.remove(p).catch(() => undefined);
    fixture?.close();
    rt?.close();
  });

  it('restart prints every journaled step once and in order, run after run', async () => {
    const p = await pod('steps', ['app', 'logger']);
    for (let i = 0; i < 4; i++) {
      const res = await ctl(agent.socket, 'restart', p.name, 'logger', 'app', '--min-ready', '0s');
      assert.equal(res.code, 0, res.stdout + res.stderr);
      const id = /^operation ([0-9a-f-]{36}) on pod/m.exec(res.stdout)?.[1];
      assert.ok(id, res.stdout);
      const got = await ctl(agent.socket, '-o', 'json', 'get', id);
      assertEveryStepOnce(res.stdout, JSON.parse(got.stdout) as JsonOp);
      assert.doesNotMatch(res.stdout, /removingold|rolledback/, 'phases are words');
      const times = [...res.stdout.matchAll(/^ +([0-9.]+)(ms|s) {2}/gm)].map((m) => Number(m[1]) * (m[2] === 's' ? 1000 : 1));
      assert.ok(times.length >= 4 && times.every((t, k) => k === 0 || t >= times[k - 1]!), `times never run backwards:\n${res.stdout}`);
    }
  });

  it('restart whose reader goes away (| head) exits quietly; the operation goes on in the agent', async () => {
    const p = await pod('pipe');
    // The read end is closed before inplacectl (a fresh node process) can print anything: its writes get EPIPE.
    const child = spawn(process.execPath, [CTL, '--agent', `unix://${agent.socket}`, 'restart', p.name, 'app', '--min-ready', '0s'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(stderr, '', 'no stack trace');
    assert.equal(code, 0);
    const c = new AgentClient(`unix://${agent.socket}`);
    try {
      const ops = await c.listOperations(p.podId);
      assert.equal(ops.length, 1);
      let last;
      for await (const o of c.watchOperation(ops[0]!.id)) last = o;
      assert.equal(last?.state, 'Succeeded', last?.error);
    } finally {
      c.close();
    }
  });

  it('watch on an operation under way says so and replays what happened before it joined', async () => {
    const p = await pod('watch');
    const c = new AgentClient(`unix://${agent.socket}`);
    try {
      // Long enough a min-ready that inplacectl (a new node process, on a loaded machine) joins while it runs.
      const op = await c.restart({ pod: p.name, containers: ['app'], images: {}, minReadyMs: '10000', minReadySet: true, timeoutMs: '0', graceSeconds: 0, graceSet: false });
      for await (const o of c.watchOperation(op.id)) if (o.state === 'Verifying') break;
      const res = await ctl(agent.socket, 'watch', op.id.slice(0, 8));
      assert.equal(res.code, 0, res.stdout + res.stderr);
      assert.match(res.stdout.split('\n')[0], new RegExp(`^operation ${op.id} on pod ${p.name}, verifying when this watch joined; what happened before is replayed`));
      const got = await ctl(agent.socket, '-o', 'json', 'get', op.id);
      const end = JSON.parse(got.stdout) as JsonOp;
      assert.equal(end.state, 'Succeeded');
      assertEveryStepOnce(res.stdout, end);
      assert.match(res.stdout, /app: creating\n.*app: created [0-9a-f]{12} /, 'the steps before the watch joined are there');
    } finally {
      c.close();
    }
  });

  it('a cancel during verification prints what it does and what happened: the wait cut short, the replacement kept', async () => {
    const p = await pod('cancel');
    const restart = ctl(agent.socket, 'restart', p.name, 'app', '--min-ready', '30s');
    const c = new AgentClient(`unix://${agent.socket}`);
    try {
      let id = '';
      while (!id) {
        id = (await c.listOperations(p.name).catch(() => []))[0]?.id ?? '';
        if (!id) await new Promise((r) => setTimeout(r, 50));
      }
      for await (const o of c.watchOperation(id)) if (o.state === 'Verifying') break;
      const cancel = await ctl(agent.socket, 'cancel', id);
      assert.equal(cancel.code, 0, cancel.stderr);
      assert.match(cancel.stdout, /^cancel requested for operation \S+: the replacement of app is kept once it is seen running \(the min-ready wait is cut short\) and the old container removed\./);
      const res = await restart;
      assert.equal(res.code, 1, res.stdout + res.stderr);
      assert.match(res.stdout, /app: verification cut short by the cancel after [0-9.]+m?s of the 30\.0s min-ready; the running replacement is kept/);
      assert.doesNotMatch(res.stdout, /app: verified$/m, 'not "verified" after a cut-short wait');
      assert.match(res.stdout, /Cancelled \[Cancelled\]: .*kept without the full min-ready window: app/);
      const help = await ctl(agent.socket, 'cancel', '--help');
      for (const phase of ['pending', 'pulling images', 'creating / created', 'stopping .. started', 'verifying']) assert.match(help.stdout, new RegExp(`^  ${phase.replace(/[.]/g, '\\.')} `, 'm'));
      assert.doesNotMatch(help.stdout, /the old containers keep running\)/);
    } finally {
      c.close();
    }
  });

  it('a failed pull reads as one sentence: reason once, image once, then the cause', async () => {
    const p = await pod('pullfail');
    const missing = `${env.registry}/inplace/app:v9-${run}`;
    const res = await ctl(agent.socket, 'restart', p.name, 'app', '--image', `app=${missing}`);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    const last = res.stdout.trim().split('\n').pop() ?? '';
    assert.match(last, /^operation \S+ Failed \[ImagePullFailed\]: image "[^"]+" could not be pulled: not found in its registry; nothing was stopped$/);
    assert.equal(last.split(missing).length - 1, 1, `the image is named once: ${last}`);
    assert.equal(last.split('ImagePullFailed').length - 1, 1, `the reason is named once: ${last}`);
  });

  it('-o json: pods in RFC 3339 times, containers by name, no exit code for a running container', async () => {
    const p = await pod('json', ['zeta', 'alpha', 'mid']);
    const res = await ctl(agent.socket, '-o', 'json', 'pods');
    assert.equal(res.code, 0, res.stderr);
    const list = JSON.parse(res.stdout) as { runtime: string; pods: { id: string; createdAt: string; containers: Record<string, unknown>[] }[] };
    const mine = list.pods.find((x) => x.id === p.podId);
    assert.ok(mine, 'the pod is listed');
    assert.match(mine.createdAt, RFC3339);
    assert.deepEqual(mine.containers.map((x) => x.name), ['alpha', 'mid', 'zeta']);
    for (const ct of mine.containers) {
      assert.equal(ct.state, 'running');
      assert.ok(!('exitCode' in ct), `no exit code for running ${String(ct.name)}`);
      assert.match(String(ct.createdAt), RFC3339);
      assert.match(String(ct.startedAt), RFC3339);
    }
    const text = await ctl(agent.socket, 'pods');
    const order = text.stdout.split('\n').filter((l) => l.includes(p.podId.slice(0, 12))).map((l) => l.split(/\s+/)[3]);
    assert.deepEqual(order, ['alpha', 'mid', 'zeta'], text.stdout);
  });

  it('-o json: a pull of a present image carries no invented byte total, layers, digest or error', async () => {
    const res = await ctl(agent.socket, '-o', 'json', 'pull', env.images.appV1);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    for (const line of res.stdout.trim().split('\n')) {
      const e = JSON.parse(line) as Record<string, unknown>;
      if ('bytesTotal' in e) assert.ok(Number(e.bytesTotal) > 0, line);
      if ('layers' in e) assert.ok((e.layers as unknown[]).length > 0, line);
      for (const k of ['digest', 'imageId', 'error', 'errorKind']) if (k in e) assert.notEqual(e[k], '', `${k} in ${line}`);
    }
  });

  it('ops --pod for a pod nobody knows says so and exits 1; get with a short id is bad usage (exit 2)', async () => {
    const res = await ctl(agent.socket, 'ops', '--pod', `nosuch-${run}`);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stderr, new RegExp(`^inplacectl: no pod "nosuch-${run}" is known: it is not on this node and no operation names it\\n$`));
    const json = await ctl(agent.socket, '-o', 'json', 'ops', '--pod', `nosuch-${run}`);
    assert.deepEqual(JSON.parse(json.stdout), { error: `no pod "nosuch-${run}" is known: it is not on this node and no operation names it`, errorKind: 'NotFound', reason: 'PodNotFound', exitCode: 1 });
    const short = await ctl(agent.socket, 'get', '123');
    assert.equal(short.code, 2, short.stderr);
  });

  it('version prints the client and the agent, with the runtime it drives', async () => {
    const res = await ctl(agent.socket, 'version');
    assert.equal(res.code, 0, res.stderr);
    const v = (await rt.version()).version;
    assert.match(res.stdout, /^Client Version: \d+\.\d+\.\d+\nAgent Version: \d+\.\d+\.\d+ \(API inplace\.v1, at unix:\/\/.+\)\nRuntime: containerd \S+ \(cri\)\n$/);
    assert.ok(res.stdout.includes(v), `the runtime version ${v} is shown`);
    const json = JSON.parse((await ctl(agent.socket, '-o', 'json', 'version')).stdout) as { client: { version: string }; agent: { version: string; runtime: string } };
    assert.equal(json.agent.runtime, 'cri');
    assert.equal(json.client.version, json.agent.version);
  });
});
