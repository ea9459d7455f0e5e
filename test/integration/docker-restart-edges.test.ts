// Docker-specific edges of an in-place restart, through the real agent on dockerd and on Podman: a replacement
// that its restart policy keeps bringing back, a --rm container, a pod of one on a network of its own (its static
// IP kept on both engines), and on Podman a pod of Podman's own (read as a pod; its members are not replaced).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import { AgentClient } from '../../src/api/client.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import { dockerClient } from '../testbed/docker-pods.js';
import { ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { requireRuntime } from '../support/require-runtime.js';
import { dockerTargets } from '../support/runtime-matrix.js';

/** The podman CLI as a remote client of the sandbox's Podman service (its pods are made the way users make them). */
async function podman(host: string, ...args: string[]): Promise<string> {
  return (await promisify(execFile)('podman', ['--remote', '--url', host, ...args], { timeout: 60_000 })).stdout.trim();
}

for (const target of dockerTargets()) {
const env = { ...target.env, dockerHost: target.dockerHost };
/** Each engine's networks get a subnet of their own, so that one left behind never shadows the other's. */
const subnet = target.engine === 'dockerd' ? '10.199.77' : '10.199.78';
const itPodman = target.engine === 'podman' ? it : () => undefined;

describe(`in-place restart edges on Docker (${target.title})`, function () {
  this.timeout(120_000);
  let rt: DockerRuntime;
  let docker: Dockerode;
  let agent: AgentProcess;
  const made: string[] = [];
  const networks: string[] = [];

  const run = async (body: Dockerode.ContainerCreateOptions): Promise<Dockerode.ContainerInspectInfo> => {
    const c = await docker.createContainer(body);
    made.push(c.id);
    await c.start();
    return c.inspect();
  };
  const byName = async (name: string) => {
    // By exact name, read from the list itself (Podman's name filter does not take dockerd's `^/name$` pattern).
    const list = (await docker.listContainers({ all: true })).filter((c) => c.Names.some((n) => n.replace(/^\//, '') === name));
    return list.length === 1 ? docker.getContainer(list[0].Id).inspect() : undefined;
  };

  before(async function () {
    rt = new DockerRuntime(env.dockerHost);
    await requireRuntime(this, `${target.title} at ${env.dockerHost}`, () => rt.version());
    docker = dockerClient(env.dockerHost);
    for (const image of [env.images.appV1, env.images.crash]) if (!(await rt.inspectImage(image))) await rt.pullImage(image);
    agent = await startAgent(['--runtime', 'docker', '--docker-host', env.dockerHost, '--min-ready', '1500ms', '--grace', '5s']);
  });

  after(async () => {
    await agent?.stop();
    const all = await docker.listContainers({ all: true });
    for (const c of all) {
      if (made.includes(c.Id) || c.Names.some((n) => n.includes('-edge-'))) await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
    }
    for (const n of networks) await docker.getNetwork(n).remove().catch(() => undefined);
    rt?.close();
  });

  it('rolls back a replacement that its restart policy keeps restarting (crash loop is not ready)', async () => {
    const name = `loop-edge-${randomBytes(3).toString('hex')}`;
    const old = await run({ name, Image: env.images.appV1, HostConfig: { NetworkMode: 'none', RestartPolicy: { Name: 'always' } } });
    const res = await ctl(agent.socket, '-o', 'json', 'restart', `docker/${name}`, name, '--image', `${name}=${env.images.crash}`);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    const op = JSON.parse(res.stdout.slice(res.stdout.indexOf('{'))) as { state: string; containers: { step: string; error: string }[] };
    assert.equal(op.state, 'Failed');
    assert.equal(op.containers[0].step, 'RolledBack');
    assert.match(op.containers[0].error, /crash-looping|exited/);
    const now = await byName(name);
    assert.equal(now?.Id, old.Id, 'the old container runs again under its name');
    assert.equal(now?.State.Running, true);
    assert.equal(now?.HostConfig.RestartPolicy?.Name, 'always');
    const left = await docker.listContainers({ all: true, filters: { name: [name] } });
    assert.equal(left.length, 1, `no replacement left: ${left.map((c) => c.Names.join()).join(' ')}`);
  });

  it('refuses a --rm container before touching it: stopping it would delete it', async () => {
    const name = `rm-edge-${randomBytes(3).toString('hex')}`;
    const old = await run({ name, Image: env.images.appV1, HostConfig: { NetworkMode: 'none', AutoRemove: true } });
    const res = await ctl(agent.socket, 'restart', `docker/${name}`, name);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stdout + res.stderr, /--rm/);
    const now = await byName(name);
    assert.equal(now?.Id, old.Id);
    assert.equal(now?.State.Running, true);
  });

  it('runs two queued restarts of a pod of one (whose id changes with its container)', async () => {
    const name = `solo-edge-${randomBytes(3).toString('hex')}`;
    const old = await run({ name, Image: env.images.appV1, HostConfig: { NetworkMode: 'none' } });
    const c = new AgentClient(`unix://${agent.socket}`);
    try {
      const req = { pod: `docker/${name}`, containers: [name], images: {}, graceSeconds: 5, graceSet: true, minReadyMs: '200', minReadySet: true, timeoutMs: '0' };
      const [a, b] = await Promise.all([c.restart(req), c.restart(req)]);
      const ends = [];
      for (const op of [a, b]) {
        let last;
        for await (const o of c.watchOperation(op.id)) last = o;
        ends.push(last!);
      }
      assert.deepEqual(ends.map((e) => e.state), ['Succeeded', 'Succeeded'], ends.map((e) => e.error).join(' | '));
      const now = await byName(name);
      assert.ok(now && now.Id !== old.Id && now.State.Running);
      made.push(now.Id);
    } finally {
      c.close();
    }
  });

  it('keeps a pod of one on its own network with its static IP and alias', async () => {
    const suffix = randomBytes(3).toString('hex');
    const netName = `edge-net-${suffix}`;
    await docker.createNetwork({ Name: netName, Driver: 'bridge', Internal: true, IPAM: { Config: [{ Subnet: `${subnet}.0/24` }] } });
    networks.push(netName);
    const name = `net-edge-${suffix}`;
    const old = await run({
      name,
      Image: env.images.appV1,
      HostConfig: { NetworkMode: netName },
      NetworkingConfig: { EndpointsConfig: { [netName]: { IPAMConfig: { IPv4Address: `${subnet}.50` }, Aliases: ['db'] } } },
    });
    assert.equal(old.NetworkSettings.Networks[netName].IPAddress, `${subnet}.50`);
    const res = await ctl(agent.socket, 'restart', `docker/${name}`, name);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    const now = await byName(name);
    assert.ok(now && now.Id !== old.Id, 'a new container under the old name');
    made.push(now.Id);
    const ep = now.NetworkSettings.Networks[netName];
    assert.equal(ep?.IPAddress, `${subnet}.50`, 'static IP kept');
    assert.ok(ep?.Aliases?.includes('db'), `alias kept: ${JSON.stringify(ep?.Aliases)}`);
    // The pod of one got a new sandbox (its container): the output says so, and compares the IP it read again.
    assert.match(res.stdout, new RegExp(`sandbox CHANGED ${old.Id.slice(0, 12)} -> ${now.Id.slice(0, 12)}, IP ${subnet.replaceAll('.', '\\.')}\\.50 unchanged`), res.stdout);
    assert.deepEqual(Object.keys(now.NetworkSettings.Networks), [netName], 'on its network only');
  });

  itPodman('reads a pod of Podman\'s own as a pod, and refuses to replace a member before touching anything', async () => {
    const suffix = randomBytes(3).toString('hex');
    const netName = `edge-podnet-${suffix}`;
    const podSubnet = '10.199.79';
    await docker.createNetwork({ Name: netName, Driver: 'bridge', Internal: true, IPAM: { Config: [{ Subnet: `${podSubnet}.0/24` }] } });
    networks.push(netName);
    const podName = `pod-edge-${suffix}`;
    const host = env.dockerHost;
    const podId = await podman(host, 'pod', 'create', '--name', podName, '--infra-image', env.images.pause, '--network', netName, '--ip', `${podSubnet}.70`);
    try {
      for (const member of ['app', 'side']) await podman(host, 'run', '-d', '--pod', podName, '--name', `${podName}-${member}`, env.images.appV1);
      const before = await Promise.all(['app', 'side'].map((m) => byName(`${podName}-${m}`)));
      const infraId = (await podman(host, 'pod', 'inspect', '--format', '{{.InfraContainerID}}', podName)).trim();

      const listed = await ctl(agent.socket, '-o', 'json', 'pods');
      assert.equal(listed.code, 0, listed.stderr);
      const pods = (JSON.parse(listed.stdout) as { pods: { id: string; name: string; uid: string; ip: string; containers: { name: string }[] }[] }).pods;
      const pod = pods.find((p) => p.name === `podman/${podName}`);
      assert.ok(pod, `podman/${podName} listed: ${pods.map((p) => p.name).join(' ')}`);
      assert.equal(pod.uid, podId, "the pod's uid is Podman's pod id");
      assert.equal(pod.id, infraId, 'the infra container holds the pod');
      assert.equal(pod.ip, `${podSubnet}.70`);
      assert.deepEqual(pod.containers.map((c) => c.name), [`${podName}-app`, `${podName}-side`], 'its members, and not the infra container');
      assert.ok(!pods.some((p) => p.id !== pod.id && p.containers.some((c) => c.name.startsWith(podName))), 'no member shows as a pod of its own');

      const res = await ctl(agent.socket, 'restart', `podman/${podName}`, `${podName}-app`);
      assert.equal(res.code, 1, res.stdout + res.stderr);
      assert.match(res.stdout + res.stderr, new RegExp(`"${podName}-app" is in Podman pod "${podName}": Podman's Docker API cannot create a container inside a pod`));
      const after = await Promise.all(['app', 'side'].map((m) => byName(`${podName}-${m}`)));
      assert.deepEqual(after.map((c) => [c?.Id, c?.State.Running]), before.map((c) => [c?.Id, true]), 'the members run on, untouched');
      assert.equal((await docker.getContainer(infraId).inspect()).State.Running, true, 'the infra container runs on');
      const left = (await docker.listContainers({ all: true })).filter((c) => c.Names.some((n) => n.includes(`${podName}-app-`)));
      assert.deepEqual(left, [], 'no replacement left behind');
    } finally {
      await podman(host, 'pod', 'rm', '-f', podName).catch(() => undefined);
    }
  });
});
}
