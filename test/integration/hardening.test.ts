// Issue 10's defects, each against the real agent on the sandbox's containerd: a cancel ends Verifying, a
// drain ends within --drain-timeout, operations run a bounded number at a time, calls are bounded per caller,
// bad journal records are set aside (and the containers they leave are reported), and bad daemon flags are
// refused without harm.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentClient } from '../../src/api/client.js';
import { MAX_OPEN_CALLS_PER_CALLER } from '../../src/api/limits.js';
import { AgentError } from '../../src/errors.js';
import type { OperationView as Operation } from '../../src/api/convert.js';
import { OPERATION_LABEL } from '../../src/engine/restart-plan.js';
import type { RestartRequest } from '../../src/gen/inplace/v1/RestartRequest.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();
const DAEMON = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/daemon/main.js');
const CRI = ['--runtime', 'cri', '--cri-endpoint', env.criEndpoint];
const HOUR_MS = '3600000';

async function waitEnd(c: AgentClient, id: string): Promise<Operation> {
  let last: Operation | undefined;
  for await (const op of c.watchOperation(id)) last = op;
  assert.ok(last);
  return last;
}

async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('hardening (issue 10) on containerd', function () {
  this.timeout(180_000);
  let rt: CriRuntime;
  let fixture: CriPodFixture;
  const pods: TestPod[] = [];
  const agents: AgentProcess[] = [];
  const base: Omit<RestartRequest, 'pod'> = { containers: ['app'], images: {}, graceSeconds: 5, graceSet: true, minReadyMs: '200', minReadySet: true, timeoutMs: '0' };

  const newPod = async (name: string, command?: string[]) => {
    const pod = await fixture.create({
      name,
      namespace: 'harden',
      containers: [command ? { name: 'app', image: env.images.busybox, command } : { name: 'app', image: env.images.appV1 }, { name: 'side', image: env.images.appV1 }],
    });
    pods.push(pod);
    return pod;
  };
  const agent = async (args: string[] = [], opts: { stateDir?: string } = {}) => {
    const a = await startAgent([...CRI, ...args], opts);
    agents.push(a);
    return a;
  };

  before(async function () {
    rt = new CriRuntime(env.criEndpoint);
    await requireRuntime(this, 'containerd (CRI)', () => rt.version());
    fixture = new CriPodFixture(env.criEndpoint);
  });

  after(async () => {
    for (const a of agents) {
      a.child.kill('SIGKILL');
      await a.exited;
    }
    for (const p of pods) await fixture?.remove(p).catch(() => undefined);
    fixture?.close();
    rt?.close();
  });

  it('a cancel ends Verifying at once: the running replacement is kept, the operation ends Cancelled, the pod is free again', async () => {
    const pod = await newPod('cancel-verify');
    const a = await agent();
    const c = new AgentClient(`unix://${a.socket}`);
    try {
      const op = await c.restart({ ...base, pod: pod.name, minReadyMs: HOUR_MS, timeoutMs: String(2 * 3600_000) });
      for await (const o of c.watchOperation(op.id)) if (o.state === 'Verifying') break;
      await c.cancelOperation(op.id);
      const end = await within(5000, 'the cancelled operation to end', waitEnd(c, op.id));
      assert.equal(end.state, 'Cancelled', end.error);
      assert.match(end.error ?? '', /cancelled while verifying; the running replacements were kept/);
      // The old container is removed after the operation's end (off the caller's path): its step moves to Done then.
      const done = await within(10_000, 'the old container removed after the end', (async () => {
        for (;;) {
          const o = await c.getOperation(op.id);
          if (o.containers[0].step === 'Done') return o;
          await new Promise((r) => setTimeout(r, 100));
        }
      })());
      assert.equal(done.containers[0].step, 'Done');
      const app = (await rt.listContainers({ podId: pod.podId })).filter((x) => x.name === 'app');
      assert.deepEqual(app.map((x) => [x.id, x.state]), [[end.containers[0].newId, 'running']], 'only the replacement, running');
      const next = await c.restart({ ...base, pod: pod.name });
      assert.equal((await within(30_000, 'the next operation on the pod', waitEnd(c, next.id))).state, 'Succeeded');
    } finally {
      c.close();
    }
  });

  it(`refuses a caller's call beyond ${MAX_OPEN_CALLS_PER_CALLER} open ones with RESOURCE_EXHAUSTED, and serves it again once one ends`, async () => {
    const pod = await newPod('open-calls');
    const a = await agent();
    const c = new AgentClient(`unix://${a.socket}`);
    const stop = new AbortController();
    try {
      const op = await c.restart({ ...base, pod: pod.name, minReadyMs: HOUR_MS, timeoutMs: String(2 * 3600_000) });
      for await (const o of c.watchOperation(op.id)) if (o.state === 'Verifying') break;
      const watches = Array.from({ length: MAX_OPEN_CALLS_PER_CALLER }, () => new AbortController());
      let answered = 0;
      const open = watches.map(async (w) => {
        for (;;) {
          let first = true;
          try {
            for await (const _ of c.watchOperation(op.id, w.signal)) {
              if (first) answered++;
              first = false;
            }
            return;
          } catch (e) {
            // Refused while the agent had not yet seen the end of the watch above (left at Verifying): asked again.
            if (!first || w.signal.aborted || !(e instanceof AgentError && e.kind === 'ResourceExhausted')) throw e;
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      });
      open.forEach((p) => p.catch(() => undefined));
      // Each watch is open on the agent once its first answer (the operation as it is) came.
      for (const until = Date.now() + 10_000; answered < watches.length; await new Promise((r) => setTimeout(r, 20))) {
        assert.ok(Date.now() < until, `${answered} of ${watches.length} watches answered`);
      }
      await assert.rejects(c.getOperation(op.id), (e: unknown) => e instanceof AgentError && e.kind === 'ResourceExhausted' && /too many open calls/.test(e.message));
      watches[0].abort();
      // The agent frees the slot once it sees the cancelled call end: asked again until it serves (bounded).
      let view: Awaited<ReturnType<typeof c.getOperation>> | undefined;
      for (const until = Date.now() + 10_000; !view; ) {
        view = await c.getOperation(op.id).catch((e: unknown) => {
          if (!(e instanceof AgentError && e.kind === 'ResourceExhausted') || Date.now() > until) throw e;
          return new Promise<undefined>((r) => setTimeout(() => r(undefined), 50));
        });
      }
      assert.equal(view.state, 'Verifying');
      watches.forEach((w) => w.abort());
      await c.cancelOperation(op.id);
      assert.equal((await waitEnd(c, op.id)).state, 'Cancelled');
    } finally {
      stop.abort();
      c.close();
    }
  });

  it('SIGTERM ends within --drain-timeout even while a stop waits out a long grace period; the journal keeps the step to resume from', async () => {
    // busybox sleep as PID 1 ignores SIGTERM: the stop waits the whole grace period.
    const pod = await newPod('drain-bound', ['sleep', '3600']);
    const a = await agent(['--drain-timeout', '2s']);
    const c = new AgentClient(`unix://${a.socket}`);
    let id = '';
    try {
      const op = await c.restart({ ...base, pod: pod.name, graceSeconds: 3600, timeoutMs: String(2 * 3600_000) });
      id = op.id;
      for await (const o of c.watchOperation(op.id)) if (o.containers[0].step === 'Stopping') break;
    } finally {
      c.close();
    }
    const t0 = Date.now();
    a.child.kill('SIGTERM');
    const exit = await within(10_000, 'the agent to exit on SIGTERM', a.exited);
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.ok(Date.now() - t0 < 8000);
    assert.match(a.log(), /drain timed out: exiting with operations still running/);
    const record = JSON.parse(fs.readFileSync(path.join(a.stateDir, 'operations', `${id}.json`), 'utf8')) as Operation;
    assert.equal(record.containers[0].step, 'Stopping', 'the journal holds the step to resume from');
  });

  it('runs at most --max-parallel-operations operations at once; the others wait Pending and then succeed', async () => {
    const many = await Promise.all([0, 1, 2].map((i) => newPod(`slots-${i}`)));
    const a = await agent(['--max-parallel-operations', '1']);
    const c = new AgentClient(`unix://${a.socket}`);
    try {
      const ops = await Promise.all(many.map((p) => c.restart({ ...base, pod: p.name, minReadyMs: '700' })));
      let most = 0;
      for (;;) {
        const now = await c.listOperations();
        const mine = now.filter((o) => ops.some((x) => x.id === o.id));
        most = Math.max(most, mine.filter((o) => ['Pulling', 'Recreating', 'Verifying'].includes(o.state)).length);
        if (mine.every((o) => ['Succeeded', 'Failed', 'RolledBack', 'Cancelled'].includes(o.state))) {
          assert.deepEqual(mine.map((o) => o.state), ['Succeeded', 'Succeeded', 'Succeeded']);
          break;
        }
        await new Promise((r) => setTimeout(r, 30));
      }
      assert.equal(most, 1, 'one operation at a time');
    } finally {
      c.close();
    }
  });

  it('sets aside journal records of the wrong shape (named in the log and a metric), starts, and reports the container a lost record left', async () => {
    const pod = await newPod('orphan');
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-corrupt-'));
    const ops = path.join(stateDir, 'operations');
    fs.mkdirSync(ops, { recursive: true });
    const lostId = '6f1d0c2e-0b7a-4c39-9d55-1f0e2a3b4c5d';
    const bad: Record<string, string> = {
      'null.json': 'null',
      'array.json': '[1,2]',
      'empty.json': '{}',
      'no-containers.json': JSON.stringify({ id: 'no-containers', podId: 'p', podName: 'ns/p', podIp: '', state: 'Pending', request: {}, createdAt: 'x', updatedAt: 'x' }),
      [`${lostId}.json`]: `{"id":"${lostId}","podId":"${pod.podId}","state":"Recre`,
    };
    for (const [f, text] of Object.entries(bad)) fs.writeFileSync(path.join(ops, f), text);
    // The replacement that unfinished operation had created before its record was cut short.
    const app = await rt.inspectContainer(pod.containerIds.app);
    const orphan = await rt.createContainer(pod.podId, { ...app.spec, attempt: 7, labels: { ...app.spec.labels, [OPERATION_LABEL]: lostId } });

    const a = await agent(['--metrics-addr', '127.0.0.1:0'], { stateDir });
    for (const f of Object.keys(bad)) {
      assert.match(a.log(), new RegExp(`journal record is not a readable operation; set aside file=${f.replace('.', '\\.')}`), a.log());
      assert.ok(fs.existsSync(path.join(ops, 'corrupt', f)), `${f} moved to operations/corrupt/`);
    }
    assert.deepEqual(fs.readdirSync(ops), ['corrupt']);
    assert.match(a.log(), new RegExp(`orphaned container.*container=${orphan}.*operation=${lostId}`));
    const addr = /metrics and probes listening address=(\S+)/.exec(a.log())?.[1];
    const metrics = await (await fetch(`http://${addr}/metrics`)).text();
    assert.match(metrics, /inplace_journal_corrupt_records\{file="null\.json"\} 1/);
    // At least this one (an agent another test killed mid-way may have left its own).
    assert.match(metrics, /inplace_orphaned_containers [1-9]/);
    const listed = await ctl(a.socket, 'ops');
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal((await rt.inspectContainer(orphan)).state, 'created', 'reported, not removed');
  });

  it('refuses --log-level banana (flag or environment) instead of silencing the logs', () => {
    for (const run of [
      spawnSync(process.execPath, [DAEMON, '--log-level', 'banana', ...CRI], { encoding: 'utf8', timeout: 10_000 }),
      spawnSync(process.execPath, [DAEMON, ...CRI], { encoding: 'utf8', timeout: 10_000, env: { ...process.env, INPLACE_AGENT_LOG_LEVEL: 'banana' } }),
    ]) {
      assert.notEqual(run.status, 0);
      assert.match(run.stderr, /'banana'.*invalid\. Allowed choices are error, warn, info, debug/);
    }
  });

  it('--listen never deletes a regular file; it replaces only a stale socket', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-listen-'));
    const file = path.join(dir, 'precious');
    fs.writeFileSync(file, 'keep me');
    const run = spawn(process.execPath, [DAEMON, ...CRI, '--listen', `unix://${file}`, '--state-dir', path.join(dir, 'state')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    run.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await within(15_000, 'the agent to refuse the path', new Promise<number | null>((r) => run.once('exit', r))).finally(() => {
      if (run.exitCode === null) run.kill('SIGKILL');
    });
    assert.equal(code, 1);
    assert.match(stderr, /refusing to listen on .*precious: it is a regular file/);
    assert.equal(fs.readFileSync(file, 'utf8'), 'keep me');
    // A socket nobody serves (left by a killed agent) is replaced.
    const stale = path.join(dir, 'stale.sock');
    // A process that listens, then dies by SIGKILL, leaves its socket file behind.
    const holder = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(stale)}, () => process.kill(process.pid, 'SIGKILL'))`]);
    await new Promise((r) => holder.once('exit', r));
    assert.ok(fs.lstatSync(stale).isSocket(), 'a stale socket is there');
    const a = spawn(process.execPath, [DAEMON, ...CRI, '--listen', `unix://${stale}`, '--state-dir', path.join(dir, 'state1')], { stdio: 'ignore' });
    const exited = new Promise((r) => a.once('exit', r));
    const c = new AgentClient(`unix://${stale}`, 1000);
    try {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const ok = await c.listOperations().then(() => true, () => false);
        if (ok) break;
        assert.ok(Date.now() < deadline, 'the agent came up on the stale socket');
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      c.close();
    }
    // A socket another agent serves is not taken over.
    const second = spawnSync(process.execPath, [DAEMON, ...CRI, '--listen', `unix://${stale}`, '--state-dir', path.join(dir, 'state2')], { encoding: 'utf8', timeout: 15_000 });
    assert.equal(second.status, 1);
    assert.match(second.stderr, /another process is serving on that socket/);
    assert.equal(a.exitCode, null, 'the serving agent is untouched');
    a.kill('SIGTERM');
    await exited;
  });
});
