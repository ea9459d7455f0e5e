// The agent's state directory read-only or full (a small tmpfs this test mounts and removes): a new operation
// is refused with a clear error, nothing is touched, and the agent goes on serving. Against the sandbox's
// real containerd; needs root (mount).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();

describe('state directory read-only or full (cri)', function () {
  this.timeout(90_000);
  let rt: Runtime;
  let fixture: CriPodFixture;
  let pod: TestPod;
  let mnt: string;
  const mounted: string[] = [];
  let agent: AgentProcess | undefined;

  before(async function () {
    rt = new CriRuntime(env.criEndpoint);
    await requireRuntime(this, 'cri', () => rt.version());
    fixture = new CriPodFixture(env.criEndpoint);
    pod = await fixture.create({ name: 'state-dir', namespace: 'faults', containers: [{ name: 'app', image: env.images.appV1 }] });
    mnt = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-state-'));
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    while (mounted.length > 0) execFileSync('umount', [mounted.pop()!]);
  });

  after(async () => {
    if (pod) await fixture?.remove(pod).catch(() => undefined);
    if (mnt) fs.rmSync(mnt, { recursive: true, force: true });
    fixture?.close();
    rt?.close();
  });

  /** The pod's app container: still the same one, running. */
  async function assertUntouched(): Promise<void> {
    const apps = (await rt.listContainers({ podId: pod.podId })).filter((c) => c.name === 'app');
    assert.deepEqual(
      apps.map((c) => [c.id, c.state]),
      [[pod.containerIds.app, 'running']],
    );
  }

  it('read-only: a restart is refused (exit 1, "read-only filesystem" and the directory named); nothing is touched', async () => {
    const stateDir = path.join(mnt, 'ro');
    fs.mkdirSync(stateDir);
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint], { stateDir });
    execFileSync('mount', ['--bind', stateDir, stateDir]);
    mounted.push(stateDir);
    execFileSync('mount', ['-o', 'remount,bind,ro', stateDir]);
    const res = await ctl(agent.socket, 'restart', pod.name, 'app', '--image', `app=${env.images.appV2}`);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stderr, new RegExp(`cannot write the operation journal in ${stateDir}/operations: the state directory is on a read-only filesystem`));
    await assertUntouched();
    const ops = await ctl(agent.socket, '-o', 'json', 'ops');
    assert.equal(ops.code, 0, 'the agent still serves');
    assert.deepEqual(JSON.parse(ops.stdout), [], 'no operation was recorded');
  });

  it('full: a restart is refused (exit 1, "is full"); once space is freed the next one succeeds', async () => {
    const stateDir = path.join(mnt, 'full');
    fs.mkdirSync(stateDir);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k,mode=0700', 'inplace-state-test', stateDir]);
    mounted.push(stateDir);
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--min-ready', '200ms'], { stateDir });
    const filler = path.join(stateDir, 'filler');
    assert.throws(() => fs.writeFileSync(filler, Buffer.alloc(1024 * 1024)), /ENOSPC/);
    const res = await ctl(agent.socket, 'restart', pod.name, 'app', '--image', `app=${env.images.appV2}`);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stderr, /cannot write the operation journal in .*: the state directory's filesystem is full \(ENOSPC/);
    await assertUntouched();
    assert.deepEqual(fs.readdirSync(path.join(stateDir, 'operations')), [], 'no partial record left behind');

    fs.rmSync(filler);
    const ok = await ctl(agent.socket, 'restart', pod.name, 'app', '--image', `app=${env.images.appV2}`);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr + agent.log());
    const apps = (await rt.listContainers({ podId: pod.podId })).filter((c) => c.name === 'app' && c.state === 'running');
    assert.equal(apps.length, 1);
    assert.notEqual(apps[0].id, pod.containerIds.app);
  });
});
