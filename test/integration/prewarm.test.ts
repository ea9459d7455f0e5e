// --prewarm: the agent keeps the images of a list file pulled on its own, re-reading the file each round.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import { dockerClient } from '../testbed/docker-pods.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { startAgent, type AgentProcess } from '../support/agent-process.js';
import { buildImage, buildLayer, pushImage } from '../support/registry-images.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();

async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('prewarming images on its own (--prewarm, docker)', function () {
  this.timeout(90_000);
  let rt: DockerRuntime;
  let agent: AgentProcess;
  let list: string;
  const images: string[] = [];

  before(async function () {
    rt = new DockerRuntime(env.dockerHost);
    await requireRuntime(this, 'docker', () => rt.version());
    const run = randomBytes(4).toString('hex');
    for (const n of ['one', 'two']) {
      const img = buildImage([buildLayer([{ path: `etc/${n}`, data: Buffer.from(`${run}-${n}\n`) }])], `${run}-${n}`);
      images.push(await pushImage({ registry: env.registry }, `inplace/prewarm-${n}`, run, img));
    }
    list = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'prewarm-')), 'images.txt');
    fs.writeFileSync(list, `# warm before the rollout\n${images[0]}\n`);
    agent = await startAgent(['--runtime', 'docker', '--docker-host', env.dockerHost, '--min-free-disk', '0', '--prewarm', list, '--prewarm-interval', '1s']);
  });

  after(async () => {
    await agent?.stop();
    for (const i of images) await dockerClient(env.dockerHost).getImage(i).remove({ force: true }).catch(() => undefined);
    rt?.close();
  });

  it('pulls the listed image without being asked', async () => {
    await until(`${images[0]} is in the runtime's store`, async () => (await rt.inspectImage(images[0])) !== undefined);
    assert.equal(await rt.inspectImage(images[1]), undefined, 'an image not listed is not pulled');
  });

  it('picks up an edited list at the next round, and survives a broken one', async () => {
    fs.writeFileSync(list, 'Not A Ref\n');
    await until('the broken list is reported', async () => /prewarm list unreadable.*images\.txt:1: invalid image reference/.test(agent.log()));
    fs.writeFileSync(list, `${images[0]}\n${images[1]}\n`);
    await until(`${images[1]} is in the runtime's store`, async () => (await rt.inspectImage(images[1])) !== undefined);
  });
});
