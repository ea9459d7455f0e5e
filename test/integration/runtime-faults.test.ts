// Runtime outages during a restart, against the sandbox's real containerd and dockerd: the daemon is killed
// (SIGKILL) while an operation is at a given step, and started again 2 s or 10 s later. Every step runs at
// once in one outage: one pod and one agent per step, each agent stopped (INPLACE_AGENT_FAULT_STOP_AFTER_STEP)
// right after journaling its step, so its next runtime call meets the dead daemon. Steps: Creating, Stopping,
// Starting, Verifying, RemovingOld, RollingBack; both durations; containerd under CRI, dockerd under Docker.
import assert from 'node:assert/strict';
import { AgentClient } from '../../src/api/client.js';
import type { OperationView as Operation } from '../../src/api/convert.js';
import { OPERATION_LABEL } from '../../src/engine/restart-plan.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Container } from '../../src/runtime/types.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import { DockerPodFixture } from '../testbed/docker-pods.js';
import type { PodFixture, TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { startAgent, type AgentProcess } from '../support/agent-process.js';
import { sandboxDaemon, shimPids, waitStopped, type SandboxDaemon } from '../support/faults.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();

interface Flavour {
  name: 'cri' | 'docker';
  daemon: SandboxDaemon;
  agentArgs: string[];
  runtime(): Runtime;
  fixture(): PodFixture;
}

const flavours: Flavour[] = [
  {
    name: 'cri',
    daemon: 'containerd',
    agentArgs: ['--runtime', 'cri', '--cri-endpoint', env.criEndpoint],
    runtime: () => new CriRuntime(env.criEndpoint),
    fixture: () => new CriPodFixture(env.criEndpoint),
  },
  {
    name: 'docker',
    daemon: 'dockerd',
    agentArgs: ['--runtime', 'docker', '--docker-host', env.dockerHost],
    runtime: () => new DockerRuntime(env.dockerHost),
    fixture: () => new DockerPodFixture(env.dockerHost),
  },
];

/** Where the outage begins, and how the operation must end. */
interface Case {
  step: string;
  image: 'appV2' | 'crash';
  end: 'Succeeded' | 'Failed';
  version: string;
}

const cases: Case[] = [
  { step: 'Creating', image: 'appV2', end: 'Succeeded', version: 'v2' },
  { step: 'Stopping', image: 'appV2', end: 'Succeeded', version: 'v2' },
  { step: 'Starting', image: 'appV2', end: 'Succeeded', version: 'v2' },
  { step: 'Verifying', image: 'appV2', end: 'Succeeded', version: 'v2' },
  { step: 'RemovingOld', image: 'appV2', end: 'Succeeded', version: 'v2' },
  { step: 'RollingBack', image: 'crash', end: 'Failed', version: 'v1' },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const request = { images: {}, graceSeconds: 2, graceSet: true, minReadyMs: '1000', minReadySet: true, timeoutMs: '0' };

async function waitEnd(socket: string, id: string): Promise<Operation> {
  const c = new AgentClient(`unix://${socket}`, 120_000);
  try {
    let last: Operation | undefined;
    for await (const op of c.watchOperation(id)) last = op;
    assert.ok(last, `no record of operation ${id}`);
    return last;
  } finally {
    c.close();
  }
}

/** Every instance of the target: the pod's containers named app, and whatever carries the operation's label. */
async function instances(rt: Runtime, podId: string, opId: string): Promise<Container[]> {
  const all = await rt.listContainers();
  return all.filter((c) => (c.podId === podId && c.name === 'app') || c.labels[OPERATION_LABEL] === opId);
}

async function version(rt: Runtime, id: string): Promise<string> {
  const r = await rt.exec(id, ['cat', '/app/version'], 10);
  assert.equal(r.exitCode, 0, r.stderr);
  return r.stdout.trim();
}

/** Asserts the outcome the fault suites ask for: the expected end, one running instance, nothing left over. */
async function assertOutcome(rt: Runtime, pod: TestPod, op: Operation, c: Case, log: () => string): Promise<void> {
  assert.equal(op.state, c.end, `${op.state}: ${op.error}\n${log()}`);
  if (c.end === 'Failed') assert.equal(op.containers[0].step, 'RolledBack', op.containers[0].error);
  let apps = await instances(rt, pod.podId, op.id);
  // After Succeeded the old instance is removed off the caller's path (the cleanup the journal owes, which waits
  // out the runtime's outage like every other call): it may still be there when the end is reported.
  for (const t0 = Date.now(); c.end === 'Succeeded' && apps.length > 1 && Date.now() - t0 < 60_000; apps = await instances(rt, pod.podId, op.id)) await sleep(250);
  const running = apps.filter((x) => x.state === 'running');
  assert.equal(running.length, 1, `exactly one running instance: ${JSON.stringify(apps.map((x) => [x.id.slice(0, 12), x.state]))}`);
  assert.equal(apps.length, 1, `no replacement or old instance left over: ${JSON.stringify(apps.map((x) => [x.id.slice(0, 12), x.state]))}`);
  assert.equal(await version(rt, running[0].id), c.version);
  const sidecar = (await rt.listContainers({ podId: pod.podId })).find((x) => x.name === 'sidecar');
  assert.equal(sidecar?.id, pod.containerIds.sidecar, 'the sibling was not touched');
  assert.equal(sidecar?.state, 'running');
}

for (const f of flavours) {
  for (const outageMs of [2000, 10_000]) {
    describe(`${f.daemon} killed for ${outageMs / 1000} s during a restart (${f.name}), at each of ${cases.map((c) => c.step).join(', ')}`, function () {
      this.timeout(180_000);
      let rt: Runtime;
      let fixture: PodFixture;
      const pods: TestPod[] = [];
      const agents: AgentProcess[] = [];
      const ends = new Map<string, Operation>();

      before(async function () {
        rt = f.runtime();
        await requireRuntime(this, f.name, () => rt.version());
        fixture = f.fixture();
        pods.push(
          ...(await Promise.all(
            cases.map((c) =>
              fixture.create({
                name: `outage-${outageMs}-${c.step.toLowerCase()}`,
                namespace: 'faults',
                containers: [
                  { name: 'app', image: env.images.appV1 },
                  { name: 'sidecar', image: env.images.appV1 },
                ],
              }),
            ),
          )),
        );
        agents.push(...(await Promise.all(cases.map((c) => startAgent(f.agentArgs, { env: { INPLACE_AGENT_FAULT_STOP_AFTER_STEP: c.step }, readyTimeoutMs: 60_000 })))));
        // The replies are awaited after the outage: an agent may stop itself before its reply has left (a step
        // that is published, not journaled, such as Creating, signals within the same turn), and answers on SIGCONT.
        const calls = Promise.all(
          cases.map(async (c, i) => {
            const client = new AgentClient(`unix://${agents[i].socket}`);
            try {
              // The crash image exits at once; a long min-ready still fails it at the first poll that sees it
              // exited, however late a loaded machine reports the exit.
              const minReadyMs = c.image === 'crash' ? '20000' : request.minReadyMs;
              return await client.restart({ ...request, minReadyMs, pod: pods[i].name, containers: ['app'], images: { app: env.images[c.image] } });
            } finally {
              client.close();
            }
          }),
        );
        calls.catch(() => undefined); // awaited below
        await Promise.all(agents.map((a) => waitStopped(a.child.pid!, 60_000, a.log)));
        await sandboxDaemon('kill', f.daemon);
        for (const a of agents) a.child.kill('SIGCONT');
        await sleep(outageMs); // the outage itself: how long the runtime stays down is the scenario, not a wait for a result
        await sandboxDaemon('start', f.daemon);
        const ops = await calls;
        const done = await Promise.all(ops.map((op, i) => waitEnd(agents[i].socket, op.id)));
        cases.forEach((c, i) => ends.set(c.step, done[i]));
      });

      after(async () => {
        // Whatever happened, the daemon runs again for the suites after this one.
        await sandboxDaemon('start', f.daemon);
        for (const a of agents) {
          a.child.kill('SIGCONT');
          await a.stop();
        }
        await Promise.all(pods.map((p) => fixture?.remove(p).catch(() => undefined)));
        fixture?.close();
        rt?.close();
      });

      cases.forEach((c, i) => {
        it(`outage from step ${c.step}: ${c.end}${c.end === 'Failed' ? ' with the old config running' : ''}, one instance runs, no replacement left over`, async () => {
          await assertOutcome(rt, pods[i], ends.get(c.step)!, c, agents[i].log);
        });
      });
    });
  }
}

describe('agent SIGKILLed during an in-flight StartContainer (cri)', function () {
  this.timeout(120_000);
  const f = flavours[0];
  let rt: Runtime;
  let fixture: PodFixture;
  let pod: TestPod | undefined;
  const agents: AgentProcess[] = [];
  let frozen: number[] = [];

  before(async function () {
    rt = f.runtime();
    await requireRuntime(this, f.name, () => rt.version());
    fixture = f.fixture();
  });

  after(async () => {
    for (const pid of frozen) process.kill(pid, 'SIGCONT');
    for (const a of agents) {
      a.child.kill('SIGCONT');
      await a.stop();
    }
    if (pod) await fixture?.remove(pod).catch(() => undefined);
    fixture?.close();
    rt?.close();
  });

  it('the next agent waits for the start under way (and creates again a replacement whose start was cut short) instead of rolling back: Succeeded, one instance', async () => {
    pod = await fixture.create({
      name: 'inflight-start',
      namespace: 'faults',
      containers: [
        { name: 'app', image: env.images.appV1 },
        { name: 'sidecar', image: env.images.appV1 },
      ],
    });
    // The first agent stops right after the old container is stopped, before it starts the replacement.
    const first = await startAgent(f.agentArgs, { env: { INPLACE_AGENT_FAULT_STOP_AFTER_STEP: 'Stopped' } });
    agents.push(first);
    const client = new AgentClient(`unix://${first.socket}`);
    const op = await client.restart({ ...request, pod: pod.name, containers: ['app'], images: { app: env.images.appV2 } }).finally(() => client.close());
    await waitStopped(first.child.pid!, 60_000, first.log);
    // Freezing the pod's shim holds containerd's StartContainer mid-way; the agent is killed during that call.
    frozen = shimPids(env.containerdAddress, pod.podId);
    assert.ok(frozen.length > 0, 'found the shim of the pod');
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    first.child.kill('SIGCONT');
    // Time for the resumed agent to reach its StartContainer, which the frozen shim holds (the case under
    // test): nothing the test can observe marks that call as in flight, so this is a fixed margin, not a check.
    await sleep(1000);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await startAgent(f.agentArgs, { stateDir: first.stateDir });
    agents.push(second);
    // The new agent resumes from the journal and starts the replacement again while the first start is
    // still under way; the shim then goes on.
    // A margin for the new agent's own start of the replacement to overlap the first one still held by the
    // frozen shim (the race under test); nothing is checked after it but the operation's end.
    await sleep(1500);
    for (const pid of frozen) process.kill(pid, 'SIGCONT');
    frozen = [];
    const end = await waitEnd(second.socket, op.id);
    await assertOutcome(rt, pod, end, { step: 'Starting', image: 'appV2', end: 'Succeeded', version: 'v2' }, second.log);
  });
});
