// inplacectl pull through the real agent: plain progress lines, JSON lines, exit statuses.
import assert from 'node:assert/strict';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import { sandboxEnv } from '../../src/testbed/sandbox-env.js';
import { ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();

describe('inplacectl pull through the agent (docker)', function () {
  this.timeout(120_000);
  let agent: AgentProcess;
  let rt: DockerRuntime;

  before(async function () {
    rt = new DockerRuntime(env.dockerHost);
    await requireRuntime(this, 'docker', () => rt.version());
    agent = await startAgent(['--runtime', 'docker', '--docker-host', env.dockerHost, '--min-free-disk', '0']);
  });

  after(async () => {
    await agent?.stop();
    rt?.close();
  });

  it('pulls two images one at a time and prints a line per phase, ending Done (exit 0)', async () => {
    const res = await ctl(agent.socket, 'pull', '--parallel', '1', '--always', env.images.busybox, env.images.appV1);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    for (const image of [env.images.busybox, env.images.appV1]) {
      assert.match(res.stdout, new RegExp(`${image.replace(/[.]/g, '\\.')}.*(done|Done)`), res.stdout);
      assert.ok(await rt.inspectImage(image), `${image} is in the runtime's store`);
    }
  });

  it('reports JSON events with the resolved digest', async () => {
    const res = await ctl(agent.socket, '-o', 'json', 'pull', env.images.appV2);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    const events = res.stdout.trim().split('\n').map((l) => JSON.parse(l) as { phase: string; digest: string; image: string });
    const last = events[events.length - 1];
    assert.equal(last.phase, 'Done');
    assert.equal(last.image, env.images.appV2);
    assert.match(last.digest, /@sha256:[0-9a-f]{64}$/);
  });

  it('fails a missing tag at once with exit 1 and names the image', async () => {
    const missing = `${env.registry}/inplace/app:no-such-tag`;
    const res = await ctl(agent.socket, 'pull', missing);
    assert.equal(res.code, 1);
    assert.ok((res.stdout + res.stderr).includes(missing), res.stdout + res.stderr);
    assert.doesNotMatch(res.stdout + res.stderr, /Retrying/i);
  });

  it('refuses a malformed reference before calling the agent (exit 2)', async () => {
    const res = await ctl(agent.socket, 'pull', 'Not A Ref');
    assert.equal(res.code, 2);
    assert.match(res.stderr, /invalid image reference "Not A Ref"/);
  });
});
