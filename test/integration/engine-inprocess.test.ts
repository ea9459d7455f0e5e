// The restart engine in process: the real Engine, RestartExecutor, pull service and journal (in a temp dir) on
// the sandbox's containerd (CRI) and dockerd, without the daemon. Time runs on a manual clock: it moves only
// while the engine sleeps on it (min-ready polls, rollback backoff), so no test waits for real seconds of
// backoff, and the steps are seen exactly. Steps are caught with the engine's afterStep hook.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { Engine } from '../../src/engine/engine.js';
import { Journal } from '../../src/engine/journal.js';
import { CommonSteps, isTerminal, type ContainerStep, type ContainerTarget, type Operation, type RestartRequest } from '../../src/engine/operation.js';
import { Reasons, RefusalReasons } from '../../src/engine/reasons.js';
import { AGENT_LABEL, OPERATION_LABEL } from '../../src/engine/restart-plan.js';
import type { RestartStrategy } from '../../src/engine/restart-strategy.js';
import { AgentError } from '../../src/errors.js';
import { ImagePullService } from '../../src/pull/pull-service.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import { DockerPodFixture } from '../testbed/docker-pods.js';
import type { PodFixture, TestPod, TestPodSpec } from '../testbed/pod-fixture.js';
import { sandboxEnv, type SandboxEnv } from '../testbed/sandbox-env.js';
import { ManualClock, type ManualTimer } from '../support/manual-timers.js';
import { memoryLogger } from '../support/memory-logger.js';
import { extendImage } from '../support/registry-extend.js';
import { buildLayer } from '../support/registry-images.js';
import { requireRuntime } from '../support/require-runtime.js';
import { criTargets } from '../support/runtime-matrix.js';

type StepHook = (op: Operation, t: ContainerTarget) => void;

/** An engine on a real runtime with a manual clock, a journal in a temp dir and per-step hooks. */
class Harness {
  readonly clock = new ManualClock();
  readonly stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-engine-'));
  readonly log = memoryLogger();
  /** Called after a container step is journaled (or marked), by step name. */
  readonly hooks = new Map<ContainerStep, StepHook>();
  /** Strategies tried before the standalone one. */
  strategies: RestartStrategy[] = [];
  engine!: Engine;

  /** The agent identity the engine puts on its replacements (none unless set). */
  agentId?: string;

  constructor(
    readonly rt: Runtime,
    private readonly retention?: number,
    private readonly journal: (stateDir: string) => Journal = (dir) => new Journal(dir),
  ) {}

  /** Builds and starts an engine on the state directory (again: a restarted agent). */
  async start(retention = this.retention): Promise<Engine> {
    const puller = new ImagePullService({ runtime: this.rt, clock: this.clock, metricsRegistry: new Registry(), logger: this.log.logger });
    this.engine = new Engine({
      runtime: this.rt,
      puller,
      journal: this.journal(this.stateDir),
      clock: this.clock,
      log: this.log.logger,
      retention,
      strategies: this.strategies,
      afterStep: (op, t, step) => this.hooks.get(step)?.(op, t),
      agentId: this.agentId,
    });
    await this.engine.start();
    return this.engine;
  }

  /** Operation ids with a record in the journal directory. */
  journalIds(): string[] {
    return fs
      .readdirSync(path.join(this.stateDir, 'operations'))
      .filter((n) => n.endsWith('.json'))
      .map((n) => n.slice(0, -'.json'.length))
      .sort();
  }

  /** The journal record of an operation, as on disk. */
  record(id: string): Operation {
    return JSON.parse(fs.readFileSync(path.join(this.stateDir, 'operations', `${id}.json`), 'utf8')) as Operation;
  }

  /** Resolves with the operation once it has ended. */
  ended(id: string): Promise<Operation> {
    return new Promise((resolve) => {
      const check = (op: Operation) => {
        if (op.id !== id || !isTerminal(op.state)) return;
        this.engine.off('change', check);
        resolve(op);
      };
      this.engine.on('change', check);
      const now = this.engine.has(id) ? this.engine.get(id) : undefined;
      if (now) check(now);
    });
  }

  /**
   * Runs the operation to its end: whenever the engine sleeps on a short timer (a poll or a backoff, not a
   * deadline), time moves to it. beforeAdvance may hold time still until a real event happened.
   */
  async runToEnd(id: string, beforeAdvance?: (t: ManualTimer) => Promise<void>): Promise<Operation> {
    const ended = new AbortController();
    const end = this.ended(id).finally(() => ended.abort());
    for (;;) {
      const timer = await this.clock.sleeping((t) => t.ms <= 10_000, `a short sleep of operation ${id}`, 30_000, ended.signal);
      if (!timer) return end;
      await beforeAdvance?.(timer);
      await this.clock.advance(timer.at - this.clock.now());
    }
  }

  close(): void {
    fs.rmSync(this.stateDir, { recursive: true, force: true });
  }
}

/** Polls the real runtime (real time: the container's own process) until the container has exited. */
async function exitedOnRuntime(rt: Runtime, id: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await rt.containerState(id)) !== 'exited') {
    if (Date.now() > until) throw new Error(`container ${id} did not exit within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The containers of a pod named name, with their states. */
async function instances(rt: Runtime, podId: string, name: string): Promise<{ id: string; state: string; image: string }[]> {
  return (await rt.listContainers({ podId })).filter((c) => c.name === name).map((c) => ({ id: c.id, state: c.state, image: c.image }));
}

/** Whether the runtime still has the container. */
async function exists(rt: Runtime, id: string): Promise<boolean> {
  try {
    await rt.inspectContainer(id);
    return true;
  } catch (err) {
    if (AgentError.is(err, 'NotFound')) return false;
    throw err;
  }
}

/**
 * A strategy that journals every step before its side effect, as the kubelet's does: for the container named
 * `name` it journals Stopping, then stops the container through the runtime (nobody starts the next instance).
 */
function stopFirst(rt: Runtime, name: string, began?: (op: Operation) => void): RestartStrategy {
  return {
    name: 'kubelet',
    steps: [...CommonSteps, 'Stopping'],
    needsOldConfig: false,
    journalsBeforeTouching: true,
    claim: async (_pod, target) => target.name === name,
    advance: async (op, t, ctx) => {
      began?.(op);
      if (t.step === 'Waiting') await ctx.step('Stopping');
      await rt.stopContainer(t.oldId, 1);
      ctx.mark('Done');
      return true;
    },
  };
}

/** A journal whose first write of each record waits for hold (when set) to settle: its outcome is the write's. */
class HeldJournal extends Journal {
  hold?: Promise<void>;
  private readonly seen = new Set<string>();

  override async write(op: Operation, sync: boolean | 'after' = true): Promise<void> {
    if (!this.seen.has(op.id)) {
      this.seen.add(op.id);
      await this.hold;
    }
    return super.write(op, sync);
  }
}

/** Whether a line the engine logged holds both message and id. */
function logged(h: Harness, message: string, id: string): boolean {
  return h.log.lines.some((l) => l.includes(message) && l.includes(id));
}

/** The containers the runtime has that an operation labelled. */
async function labelled(rt: Runtime, opId: string): Promise<{ id: string; state: string }[]> {
  return (await rt.listContainers()).filter((c) => c.labels[OPERATION_LABEL] === opId).map((c) => ({ id: c.id, state: c.state }));
}

/** Polls (real time) until the operation's replacement exists (its first record held meanwhile); returns it. */
async function createdWhileHeld(rt: Runtime, opId: string): Promise<{ id: string; state: string }[]> {
  for (const end = Date.now() + 20_000; ; ) {
    const found = await labelled(rt, opId);
    if (found.length > 0) return found;
    if (Date.now() > end) throw new Error('no replacement was created while the record was held');
  }
}

/** Polls (real time) until check() is true. */
async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const run = randomUUID().slice(0, 6);

function request(pod: TestPod, container: string, image: string | undefined, minReadyMs: number): RestartRequest {
  return { pod: pod.name, containers: [container], images: image ? { [container]: image } : {}, graceSeconds: 1, minReadyMs, timeoutMs: 600_000 };
}

interface Flavour {
  title: string;
  env: SandboxEnv;
  runtime(): Runtime;
  fixture(): PodFixture;
}

const dockerEnv = sandboxEnv();
const flavours: (Flavour & { cri: boolean })[] = [
  ...criTargets().map((t) => ({ title: t.title, env: t.env, cri: true, runtime: () => new CriRuntime(t.env.criEndpoint), fixture: () => new CriPodFixture(t.env.criEndpoint) })),
  { title: 'docker', env: dockerEnv, cri: false, runtime: () => new DockerRuntime(dockerEnv.dockerHost), fixture: () => new DockerPodFixture(dockerEnv.dockerHost) },
];

for (const f of flavours) {
  describe(`engine in process on a manual clock (${f.title})`, function () {
    this.timeout(120_000);
    let rt: Runtime;
    let fixture: PodFixture;
    const pods: TestPod[] = [];
    const harnesses: Harness[] = [];
    const dirs: string[] = [];

    before(async function () {
      rt = f.runtime();
      await requireRuntime(this, f.title, () => rt.version());
      fixture = f.fixture();
      // Present before any operation: a real pull takes real time, while the pull's own watchers (progress,
      // stall) sleep on the clock, which the tests move only for the engine's waits.
      for (const image of [f.env.images.appV1, f.env.images.appV2, f.env.images.crash]) {
        if (!(await rt.inspectImage(image))) await rt.pullImage(image);
      }
    });

    after(async () => {
      for (const h of harnesses) {
        // Its 0 ms drain timeout is on the manual clock: moving it ends the drain even with an operation left.
        const drained = h.engine?.drain(0);
        await h.clock.advance(1);
        await drained;
      }
      for (const p of pods) await fixture?.remove(p).catch(() => undefined);
      for (const h of harnesses) h.close();
      for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
      fixture?.close();
      rt?.close();
    });

    const pod = async (name: string, containers: string[], volume?: TestPodSpec['volume']): Promise<TestPod> => {
      const p = await fixture.create({ name: `${name}-${run}`, namespace: 'engine', containers: containers.map((c) => ({ name: c, image: f.env.images.appV1 })), volume });
      pods.push(p);
      return p;
    };

    /** A started engine whose journal holds each record's first write while its hold is set. */
    const heldHarness = async (): Promise<{ h: Harness; journal: HeldJournal }> => {
      let journal!: HeldJournal;
      const h = new Harness(rt, undefined, (dir) => (journal = new HeldJournal(dir)));
      harnesses.push(h);
      await h.start();
      return { h, journal };
    };

    const harness = async (retention?: number): Promise<Harness> => {
      const h = new Harness(rt, retention);
      harnesses.push(h);
      await h.start();
      return h;
    };

    it('cancel at Created: the created replacement is removed, the old container runs on; RolledBack, reason Cancelled', async () => {
      const p = await pod('cancel-created', ['app', 'sidecar']);
      const h = await harness();
      let created = '';
      let cancelled: Promise<Operation> | undefined;
      h.hooks.set('Created', (op, t) => {
        created = t.newId;
        cancelled = h.engine.cancel(op.id);
      });
      const op = await h.engine.restart(request(p, 'app', f.env.images.appV2, 1000));
      const end = await h.runToEnd(op.id);
      assert.ok(created, `the operation reached Created: ${JSON.stringify(end)}`);
      assert.equal((await cancelled)?.id, op.id);
      assert.equal(end.state, 'RolledBack', end.error);
      assert.equal(end.reason, Reasons.Cancelled);
      assert.equal(end.containers[0].step, 'RolledBack');
      assert.match(end.error ?? '', /Cancelled: cancelled before the old container was stopped/);
      assert.deepEqual(
        end.containers[0].steps.map((s) => s.step),
        ['Waiting', 'Creating', 'Created', 'RolledBack'],
      );
      assert.equal(await exists(rt, created), false, 'the created replacement is gone');
      assert.deepEqual(await instances(rt, p.podId, 'app'), [{ id: p.containerIds.app, state: 'running', image: f.env.images.appV1 }], 'the old container, and only it, runs');
      assert.deepEqual((await rt.listContainers()).filter((c) => c.labels[OPERATION_LABEL] === op.id), [], 'nothing labelled with the operation is left');
      assert.equal(h.record(op.id).state, 'RolledBack', 'the journal holds the end');
    });

    it('a cancel answers with the operation as it found it, even when the operation ends while the cancel is journaled', async () => {
      const p = await pod('cancel-answer', ['app']);
      // The cancel's journal write is held until the operation has ended: the min-ready wait sees the cancel
      // meanwhile (as it did on a loaded machine, where inplacectl printed "it had already ended").
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let holding = false;
      class HeldJournal extends Journal {
        override async write(op: Operation, sync?: boolean | 'after'): Promise<void> {
          if (op.cancelRequested && !holding) {
            holding = true;
            await held;
          }
          return super.write(op, sync);
        }
      }
      const h = new Harness(rt, undefined, (dir) => new HeldJournal(dir));
      harnesses.push(h);
      await h.start();
      let cancelled: Promise<Operation> | undefined;
      h.hooks.set('Verifying', (op) => void (cancelled ??= h.engine.cancel(op.id)));
      const op = await h.engine.restart(request(p, 'app', f.env.images.appV2, 30_000));
      void h.ended(op.id).then(() => release());
      const end = await h.runToEnd(op.id);
      assert.equal(end.state, 'Cancelled', end.error);
      assert.ok(holding, 'the cancel\'s journal write was held');
      const answer = await cancelled!;
      assert.equal(answer.id, op.id);
      assert.equal(isTerminal(answer.state), false, `the answer is the operation as the cancel found it, not its end: ${answer.state}`);
      assert.equal(answer.containers[0].step, 'Verifying');
      assert.equal(answer.cancelRequested, true);
      assert.equal(h.engine.get(op.id).state, 'Cancelled', 'the engine holds the end');
    });

    it('the operation\'s deadline cuts a pull that hangs short on the clock, not before; nothing is stopped', async () => {
      // A registry that accepts connections and never answers.
      const held: net.Socket[] = [];
      const server = net.createServer((sock) => held.push(sock));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const port = (server.address() as net.AddressInfo).port;
        const p = await pod('pull-deadline', ['app']);
        const h = await harness();
        const op = await h.engine.restart({ ...request(p, 'app', `127.0.0.1:${port}/inplace/hangs:1`, 0), timeoutMs: 30_000 });
        await h.clock.sleeping((t) => t.ms === 30_000, 'the operation deadline during the pull');
        await h.clock.advance(29_999);
        assert.equal(h.engine.get(op.id).state, 'Pulling', 'still pulling just before the deadline');
        await h.clock.advance(1);
        const end = await h.ended(op.id);
        assert.equal(end.state, 'Failed');
        assert.equal(end.reason, Reasons.Deadline, 'a pull the deadline cut short failed for want of time');
        assert.equal(end.errorKind, 'DeadlineExceeded');
        assert.match(end.error ?? '', /^image "127\.0\.0\.1:\d+\/inplace\/hangs:1" was not present before the operation's deadline: .*; nothing was stopped$/);
        assert.deepEqual(end.containers[0].steps.map((x) => x.step), ['Waiting']);
        assert.deepEqual(await instances(rt, p.podId, 'app'), [{ id: p.containerIds.app, state: 'running', image: f.env.images.appV1 }]);
      } finally {
        for (const sock of held) sock.destroy();
        server.close();
      }
    });

    it('the deadline bounds min-ready on the clock: a replacement not verified in time is rolled back at the deadline', async () => {
      const p = await pod('ready-deadline', ['app']);
      const h = await harness();
      let rollingAt = 0;
      h.hooks.set('RollingBack', () => (rollingAt = h.clock.now()));
      // The deadline holds min-ready and grace (a shorter one is refused at plan time), but the replacement
      // is created 15 s in (time moves while the runtime creates it): its 30 s of min-ready would end past the
      // 40 s deadline.
      h.hooks.set('Creating', () => void h.clock.advance(15_000));
      const op = await h.engine.restart({ ...request(p, 'app', f.env.images.appV2, 30_000), timeoutMs: 40_000 });
      const deadline = Date.parse(op.createdAt) + 40_000;
      const end = await h.runToEnd(op.id);
      assert.equal(end.state, 'Failed');
      assert.equal(end.reason, Reasons.Deadline);
      const t = end.containers[0];
      assert.equal(t.step, 'RolledBack', t.error);
      assert.match(t.error ?? '', /DeadlineExceeded: replacement for "app" was not verified before the operation's deadline/);
      assert.ok(rollingAt > deadline && rollingAt <= deadline + 100, `rolled back at the first poll past the deadline (${rollingAt - deadline} ms after it)`);
      // The old config runs again, once: the old container itself on Docker, a new instance of it on CRI.
      assert.deepEqual(await instances(rt, p.podId, 'app'), [{ id: t.rollbackId, state: 'running', image: f.env.images.appV1 }]);
      if (!f.cri) assert.equal(t.rollbackId, p.containerIds.app);
      assert.equal(await exists(rt, t.newId), false, 'the replacement is removed');
    });

    if (!f.cri) return;

    it('rollback retries: a rollback that fails twice is tried again after 0.5 s and 1 s on the clock, then the old config runs', async () => {
      const base = fs.mkdtempSync(path.join(os.tmpdir(), `inplace-engine-vol-${run}-`));
      dirs.push(base);
      const hostPath = path.join(base, 'vol');
      fs.mkdirSync(hostPath);
      const p = await pod('rollback-retry', ['app'], { hostPath, mountPath: '/data' });
      const h = await harness();
      let replacement = '';
      let rollingFrom = -1;
      let rollingAt = 0;
      let rolledBackAt = 0;
      h.hooks.set('Started', (_op, t) => (replacement = t.newId));
      // The old config cannot be recreated for a while: its volume's host path is not a directory.
      const breakPath = () => {
        fs.rmSync(base, { recursive: true, force: true });
        fs.writeFileSync(base, 'not a directory');
      };
      const healPath = () => {
        fs.rmSync(base, { force: true });
        fs.mkdirSync(hostPath, { recursive: true });
      };
      h.hooks.set('RollingBack', () => {
        breakPath();
        rollingFrom = h.clock.sleeps.length;
        rollingAt = h.clock.now();
      });
      h.hooks.set('RolledBack', () => (rolledBackAt = h.clock.now()));
      const op = await h.engine.restart(request(p, 'app', f.env.images.crash, 2000));
      const end = await h.runToEnd(op.id, async (t) => {
        // Min-ready polls: time moves only once the crash has really happened.
        if (rollingFrom < 0 && replacement) await exitedOnRuntime(rt, replacement);
        // The second backoff: the path is healed before it ends.
        if (rollingFrom >= 0 && t.ms === 1000) healPath();
      });
      assert.equal(end.state, 'Failed', end.error);
      assert.equal(end.reason, Reasons.ExitedEarly);
      const t = end.containers[0];
      assert.equal(t.step, 'RolledBack', t.error);
      assert.equal(t.exitCode, 3);
      assert.deepEqual(h.clock.sleeps.slice(rollingFrom), [500, 1000], 'two backoffs, 0.5 s then 1 s, and nothing else during the rollback');
      assert.equal(rolledBackAt - rollingAt, 1500, 'the rollback took 1.5 s of clock time');
      const retries = h.log.lines.map((l) => JSON.parse(l) as { message: string; attempt?: number; error?: string }).filter((l) => l.message === 'rollback step failed; retrying');
      assert.deepEqual(retries.map((l) => l.attempt), [1, 2]);
      assert.match(retries[0].error ?? '', /not a directory/);
      // Exactly one instance of app runs: the old config again (a new instance from it, on CRI).
      const now = await instances(rt, p.podId, 'app');
      assert.deepEqual(now, [{ id: t.rollbackId, state: 'running', image: f.env.images.appV1 }]);
      assert.equal(await exists(rt, replacement), false, 'the failed replacement is removed');
      assert.equal(await exists(rt, p.containerIds.app), false, 'the old (stopped) instance is removed once the new one runs');
      assert.equal(h.record(op.id).containers[0].rollbackId, t.rollbackId);
    });

    it('rollback retries: a rollback that keeps failing gives up after 5 tries (0.5+1+2+4 s) with RollbackFailed; the replacement is removed', async () => {
      const base = fs.mkdtempSync(path.join(os.tmpdir(), `inplace-engine-vol-${run}-`));
      dirs.push(base);
      const hostPath = path.join(base, 'vol');
      fs.mkdirSync(hostPath);
      const p = await pod('rollback-gives-up', ['app', 'sidecar'], { hostPath, mountPath: '/data' });
      const h = await harness();
      let replacement = '';
      let rollingFrom = -1;
      h.hooks.set('Started', (_op, t) => (replacement = t.newId));
      h.hooks.set('RollingBack', () => {
        fs.rmSync(base, { recursive: true, force: true });
        fs.writeFileSync(base, 'not a directory');
        rollingFrom = h.clock.sleeps.length;
      });
      const op = await h.engine.restart(request(p, 'app', f.env.images.crash, 2000));
      const end = await h.runToEnd(op.id, async () => {
        if (rollingFrom < 0 && replacement) await exitedOnRuntime(rt, replacement);
      });
      fs.rmSync(base, { force: true });
      fs.mkdirSync(hostPath, { recursive: true });
      assert.equal(end.state, 'Failed');
      assert.equal(end.reason, Reasons.RollbackFailed);
      assert.equal(end.containers[0].step, 'Failed');
      assert.match(end.error ?? '', /ReplacementExitedDuringMinReady: .*; RollbackFailed: .*not a directory.*; container "app" may need manual attention/);
      assert.deepEqual(h.clock.sleeps.slice(rollingFrom), [500, 1000, 2000, 4000]);
      assert.equal(await exists(rt, replacement), false, 'the failed replacement is removed');
      // What is left is what the error says: the old container, stopped, and nothing else of app.
      assert.deepEqual(await instances(rt, p.podId, 'app'), [{ id: p.containerIds.app, state: 'exited', image: f.env.images.appV1 }]);
      assert.deepEqual(await instances(rt, p.podId, 'sidecar'), [{ id: p.containerIds.sidecar, state: 'running', image: f.env.images.appV1 }], 'the sibling was not touched');
    });

    it('retention: finished operations beyond the limit are pruned, oldest first, from memory and disk; not before', async () => {
      const p = await pod('retention', ['app']);
      const h = await harness(2);
      const ids: string[] = [];
      const restartOnce = async () => {
        await h.clock.advance(60_000); // distinct creation times
        const op = await h.engine.restart(request(p, 'app', undefined, 0));
        ids.push(op.id);
        const end = await h.runToEnd(op.id);
        assert.equal(end.state, 'Succeeded', end.error);
        return end;
      };
      await restartOnce();
      await restartOnce();
      const settle = async (want: string[]) => {
        const until = Date.now() + 5000;
        while (JSON.stringify(h.journalIds()) !== JSON.stringify([...want].sort()) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
        assert.deepEqual(h.journalIds(), [...want].sort());
      };
      await settle(ids);
      // start() prunes before it returns: an agent started again keeps both, as they are within the limit of 2.
      await h.engine.drain();
      await h.start(2);
      assert.deepEqual(h.journalIds(), [...ids].sort(), 'two finished operations are within the limit of 2: both kept');
      assert.deepEqual(h.engine.list().map((o) => o.id), [ids[1], ids[0]]);
      const third = await restartOnce();
      await settle(ids.slice(1));
      assert.throws(() => h.engine.get(ids[0]), (e: unknown) => AgentError.is(e, 'NotFound') && e.reason === RefusalReasons.OperationNotFound);
      assert.deepEqual(h.engine.list().map((o) => o.id), [ids[2], ids[1]], 'newest first, the oldest gone');
      assert.equal(h.engine.get(ids[1]).state, 'Succeeded');
      // The pod's app is the last operation's replacement; pruning records touched no container.
      assert.deepEqual(await instances(rt, p.podId, 'app'), [{ id: third.containers[0].newId, state: 'running', image: f.env.images.appV1 }]);
      // A restarted agent with a smaller limit prunes at start.
      await h.engine.drain();
      await h.start(1);
      assert.deepEqual(h.journalIds(), [ids[2]]);
      assert.deepEqual(h.engine.list().map((o) => o.id), [ids[2]]);
    });

    it('a request its caller confirms, whose strategy journals before touching, has no Pending record: its first record is its first step\'s; refused, nothing is recorded', async () => {
      const p = await pod('admit', ['app', 'sidecar']);
      const h = new Harness(rt);
      harnesses.push(h);
      const onDisk: string[] = [];
      h.strategies = [stopFirst(rt, 'app', (op) => onDisk.push(h.journalIds().includes(op.id) ? h.record(op.id).containers[0].step : 'none'))];
      await h.start();
      // Not admitted: nothing recorded, nothing touched.
      let answer: (ok: boolean) => void = () => undefined;
      const id = randomUUID();
      let asked = false;
      const refused = h.engine.restart(request(p, 'app', undefined, 0), {
        id,
        admit: () => {
          asked = true;
          return new Promise<boolean>((r) => (answer = r));
        },
      });
      await until('the admission asked', () => asked);
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(!h.journalIds().includes(id), 'no record while the request is confirmed');
      answer(false);
      await assert.rejects(refused, /was not admitted; nothing was recorded or touched/);
      assert.ok(!h.journalIds().includes(id));
      assert.equal(h.engine.has(id), false);
      // Admitted: no Pending record; the first record is the Stopping step's, written before the stop.
      const okId = randomUUID();
      const stepped: string[] = [];
      h.hooks.set('Stopping', () => stepped.push(h.record(okId).containers[0].step));
      const op = await h.engine.restart(request(p, 'app', undefined, 0), { id: okId, admit: async () => true });
      assert.equal(op.state, 'Pending');
      const end = await h.runToEnd(op.id);
      assert.equal(end.state, 'Succeeded', end.error);
      assert.deepEqual(onDisk, ['none'], 'nothing on disk as the strategy began');
      assert.deepEqual(stepped, ['Stopping'], 'Stopping journaled before the stop');
      assert.ok(h.engine.recorded(okId));
      await until('the success journaled', () => h.record(okId).state === 'Succeeded');
      await exitedOnRuntime(rt, p.containerIds.app);
      // The standalone strategy creates the replacement before its first step: its request gets a Pending record
      // before the caller hears of it, admitted or not.
      const sid = randomUUID();
      await h.engine.restart(request(p, 'sidecar', undefined, 0), { id: sid, admit: async () => true });
      assert.ok(h.journalIds().includes(sid), 'recorded before the answer');
      assert.ok(h.engine.recorded(sid));
      assert.equal((await h.runToEnd(sid)).state, 'Succeeded');
    });

    it('a standalone operation begins beside its Pending record: the replacement is created while the record is written, nothing is stopped before it, and the caller hears of it once it is on disk', async () => {
      const p = await pod('beside', ['app']);
      const { h, journal } = await heldHarness();
      let release!: () => void;
      journal.hold = new Promise<void>((r) => (release = r));
      const id = randomUUID();
      let answered = false;
      const answer = h.engine.restart(request(p, 'app', f.env.images.appV2, 0), { id }).finally(() => (answered = true));
      const created = await createdWhileHeld(rt, id);
      assert.deepEqual(created.map((c) => c.state), ['created'], 'the replacement is created, not started');
      assert.equal(answered, false, 'the caller has not heard of the operation');
      assert.ok(!h.journalIds().includes(id), 'the record is not written yet');
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(await instances(rt, p.podId, 'app').then((xs) => xs.filter((x) => x.id === p.containerIds.app)), [{ id: p.containerIds.app, state: 'running', image: f.env.images.appV1 }], 'nothing is stopped while the record is held');
      release();
      const op = await answer;
      assert.ok(h.journalIds().includes(id), 'on disk as the caller hears of it');
      const end = await h.runToEnd(op.id);
      assert.equal(end.state, 'Succeeded', end.error);
      assert.equal(end.containers[0].newId, created[0].id, 'the replacement created beside the record is the one that runs');
    });

    it('a Pending record that cannot be written: the caller hears the journal\'s error once the replacement created beside it is removed; nothing else was touched, nothing is recorded', async () => {
      const p = await pod('unrecorded', ['app']);
      const { h, journal } = await heldHarness();
      let fail!: (err: Error) => void;
      journal.hold = new Promise<void>((_, reject) => (fail = reject));
      journal.hold.catch(() => undefined);
      const id = randomUUID();
      const answer = h.engine.restart(request(p, 'app', undefined, 0), { id });
      await createdWhileHeld(rt, id);
      fail(new AgentError('ResourceExhausted', 'cannot write the operation journal: the state directory\'s filesystem is full (ENOSPC)'));
      await assert.rejects(answer, /filesystem is full \(ENOSPC\)/);
      assert.deepEqual(await labelled(rt, id), [], 'the replacement is gone when the caller hears the error');
      assert.deepEqual(await instances(rt, p.podId, 'app'), [{ id: p.containerIds.app, state: 'running', image: f.env.images.appV1 }], 'the old container, and only it, runs');
      assert.equal(h.engine.has(id), false, 'the engine does not know the operation');
      assert.ok(!h.journalIds().includes(id), 'nothing is recorded');
      // The next request goes on as ever.
      journal.hold = undefined;
      const next = await h.engine.restart(request(p, 'app', undefined, 0));
      assert.equal((await h.runToEnd(next.id)).state, 'Succeeded');
    });

    it('a Pending record that cannot be written while the operation\'s pull hangs: the pull is cut short and the caller hears the error at once; nothing is touched', async () => {
      // A registry that accepts connections and never answers.
      const held: net.Socket[] = [];
      const server = net.createServer((sock) => held.push(sock));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const port = (server.address() as net.AddressInfo).port;
        const p = await pod('unrecorded-pull', ['app']);
        const { h, journal } = await heldHarness();
        let fail!: (err: Error) => void;
        journal.hold = new Promise<void>((_, reject) => (fail = reject));
        journal.hold.catch(() => undefined);
        const id = randomUUID();
        const answer = h.engine.restart({ ...request(p, 'app', `127.0.0.1:${port}/inplace/hangs:2`, 0), timeoutMs: 600_000 }, { id });
        answer.catch(() => undefined);
        await until('the pull reached the registry', () => held.length > 0, 20_000);
        fail(new AgentError('ResourceExhausted', 'cannot write the operation journal: the state directory\'s filesystem is full (ENOSPC)'));
        const began = Date.now();
        await assert.rejects(answer, /filesystem is full \(ENOSPC\)/);
        assert.ok(Date.now() - began < 10_000, `answered after ${Date.now() - began} ms, not after the pull`);
        assert.deepEqual(await labelled(rt, id), []);
        assert.deepEqual(await instances(rt, p.podId, 'app'), [{ id: p.containerIds.app, state: 'running', image: f.env.images.appV1 }]);
        assert.equal(h.engine.has(id), false);
        assert.ok(!h.journalIds().includes(id), 'nothing is recorded');
      } finally {
        for (const sock of held) sock.destroy();
        server.close();
      }
    });

    it('at start, a replacement this agent created for an operation with no record at all is removed; another agent\'s, or one whose record was set aside, is reported and kept', async () => {
      const p = await pod('leftover', ['app']);
      const app = await rt.inspectContainer(p.containerIds.app);
      const h = new Harness(rt);
      harnesses.push(h);
      h.agentId = randomUUID();
      const make = (opId: string, agent: string, attempt: number) => rt.createContainer(p.podId, { ...app.spec, attempt, labels: { ...app.spec.labels, [OPERATION_LABEL]: opId, [AGENT_LABEL]: agent } }, `app-leftover-${attempt}-${run}`);
      const [mineId, theirsId, setAsideId] = [randomUUID(), randomUUID(), randomUUID()];
      const mine = await make(mineId, h.agentId, 21);
      const theirs = await make(theirsId, randomUUID(), 22);
      const setAside = await make(setAsideId, h.agentId, 23);
      fs.mkdirSync(path.join(h.stateDir, 'operations'), { recursive: true });
      fs.writeFileSync(path.join(h.stateDir, 'operations', `${setAsideId}.json`), '{"id":');
      await h.start();
      assert.equal(await exists(rt, mine), false, 'its own leftover, of an operation never recorded, is removed');
      assert.ok(logged(h, 'removed the replacement of an operation that ended before its first record was written', mine), h.log.lines.join('\n'));
      assert.equal(await rt.containerState(theirs), 'created', "another agent's is kept");
      assert.equal(await rt.containerState(setAside), 'created', 'one whose record was set aside is kept');
      assert.ok(logged(h, 'orphaned container', theirs), h.log.lines.join('\n'));
      assert.ok(logged(h, 'orphaned container', setAside), h.log.lines.join('\n'));
      for (const c of [theirs, setAside]) await rt.removeContainer(c);
    });

    it('a strategy that needs only the old container\'s state takes it from the plan\'s list: no status call is made for it', async () => {
      const p = await pod('listed-state', ['app', 'sidecar']);
      const asked: string[] = [];
      const counting = new Proxy(rt, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver) as unknown;
          if (typeof v !== 'function') return v;
          return (...args: unknown[]) => {
            if (prop === 'containerState' || prop === 'inspectContainer') asked.push(`${String(prop)} ${String(args[0])}`);
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const h = new Harness(counting);
      harnesses.push(h);
      h.strategies = [stopFirst(rt, 'app')];
      await h.start();
      const op = await h.engine.restart(request(p, 'app', undefined, 0), { id: randomUUID(), admit: async () => true });
      assert.equal((await h.runToEnd(op.id)).state, 'Succeeded');
      assert.deepEqual(asked.filter((a) => a.endsWith(p.containerIds.app)), [], 'the old container was not read again');
    });

    it('an operation admitted without a Pending record whose image must be downloaded is journaled as the download begins', async () => {
      const p = await pod('download', ['app']);
      const h = new Harness(rt);
      harnesses.push(h);
      const onDisk: string[] = [];
      h.strategies = [stopFirst(rt, 'app', (op) => onDisk.push(h.journalIds().includes(op.id) ? h.record(op.id).state : 'none'))];
      await h.start();
      // An image of its own (app:v2 plus one small layer, under a new tag): a real download, and no other image of
      // the store gets another name.
      const tag = `dl-${randomUUID().slice(0, 8)}`;
      const image = await extendImage(f.env.registry, f.env.images.appV2, tag, buildLayer([{ path: 'download-probe', data: Buffer.from(tag) }]));
      const op = await h.engine.restart(request(p, 'app', image, 0), { id: randomUUID(), admit: async () => true });
      assert.equal(h.engine.recorded(op.id), false, 'no record as the caller hears of it');
      const end = await h.runToEnd(op.id);
      assert.equal(end.state, 'Succeeded', end.error);
      assert.equal(end.pulls?.[0]?.pulled, true, 'the image was downloaded');
      assert.deepEqual(onDisk, ['Pulling'], 'journaled (as Pulling) before the strategy began');
    });

    it('a failed replan: an operation queued behind another fails when its container went away meanwhile; nothing is touched', async () => {
      const p = await pod('replan', ['app', 'sidecar', 'logger']);
      const h = await harness();
      let verifying = false;
      h.hooks.set('Verifying', () => (verifying = true));
      const a = await h.engine.restart(request(p, 'app', f.env.images.appV2, 5000));
      const b = await h.engine.restart(request(p, 'sidecar', undefined, 0));
      // a holds the pod (its min-ready wait runs on the clock, which stands still): b waits Pending.
      await h.clock.sleeping((t) => t.ms <= 100, 'the first min-ready poll');
      assert.ok(verifying);
      assert.equal(h.engine.get(b.id).state, 'Pending');
      // Meanwhile the sidecar goes away, outside the agent.
      await rt.stopContainer(p.containerIds.sidecar, 1);
      await rt.removeContainer(p.containerIds.sidecar);
      const endA = await h.runToEnd(a.id);
      assert.equal(endA.state, 'Succeeded', endA.error);
      const endB = await h.ended(b.id);
      assert.equal(endB.state, 'Failed');
      assert.equal(endB.reason, Reasons.PodChanged);
      assert.equal(endB.errorKind, 'NotFound');
      assert.match(endB.error ?? '', /^the pod changed while the operation waited: container "sidecar" not found in pod engine\/replan-\w+ \(it has: app, logger\); nothing was changed$/);
      assert.deepEqual(endB.containers[0].steps.map((s) => s.step), ['Waiting'], 'b never started a step');
      assert.equal(h.record(b.id).state, 'Failed', 'the journal holds the failure');
      assert.deepEqual((await rt.listContainers()).filter((c) => c.labels[OPERATION_LABEL] === b.id), [], 'b created nothing');
      assert.deepEqual(await instances(rt, p.podId, 'app'), [{ id: endA.containers[0].newId, state: 'running', image: f.env.images.appV2 }]);
      assert.deepEqual(await instances(rt, p.podId, 'logger'), [{ id: p.containerIds.logger, state: 'running', image: f.env.images.appV1 }]);
    });

    it('a failed replan after recovery: a Pending operation resumed for a pod that is gone fails, saying so', async () => {
      const p = await pod('replan-recovery', ['app', 'sidecar']);
      const h = await harness();
      // A record left Pending by an agent that stopped before running it.
      const planned = await h.engine.restart(request(p, 'app', f.env.images.appV2, 0), { dryRun: true });
      const id = randomUUID();
      await new Journal(h.stateDir).write({ ...planned, id });
      await h.engine.drain();
      await fixture.remove(p);
      await h.start();
      const end = await h.ended(id);
      assert.equal(end.state, 'Failed');
      assert.equal(end.reason, Reasons.PodChanged);
      assert.match(end.error ?? '', /^the pod changed while the operation waited: .*engine\/replan-recovery-\w+.*; nothing was changed$/);
      assert.equal(h.record(id).state, 'Failed');
      assert.deepEqual((await rt.listContainers()).filter((c) => c.labels[OPERATION_LABEL] === id), []);
    });
  });
}
