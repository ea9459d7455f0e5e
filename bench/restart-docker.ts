// bench:restart --runtime docker: on the sandbox's dockerd, one container of a three-container pod restarted
// (a) by the agent through its API, (b) by `docker restart`, (c) by compose's recreate (docker stop, docker rm,
// docker run with the same config: the adapter's own create and start from the inspected container), the three
// interleaved round by round on the same container. Time is the caller's wall time; downtime runs from the stop
// call to the replacement's start returning (for the agent, its own downtimeMs, measured the same way).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { OperationView as Operation } from '../src/api/convert.js';
import type { AgentClient } from '../src/api/client.js';
import { DockerRuntime } from '../src/runtime/docker/docker-runtime.js';
import { DockerPodFixture, dockerClient } from '../test/testbed/docker-pods.js';
import type { TestPod } from '../test/testbed/pod-fixture.js';
import { sandboxEnv } from '../test/testbed/sandbox-env.js';
import { launchAgent, rssMiB } from './agent-launch.js';
import { traceSummary } from './trace-summary.js';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const now = () => Number(process.hrtime.bigint()) / 1e6;
const fmt = (ms: number) => `${ms.toFixed(1)} ms`;
const range = (xs: number[]) => `(min ${fmt(Math.min(...xs))}, max ${fmt(Math.max(...xs))})`;

async function waitEnd(c: AgentClient, id: string): Promise<Operation> {
  let last: Operation | undefined;
  for await (const op of c.watchOperation(id)) last = op;
  if (!last || last.state !== 'Succeeded') throw new Error(`operation ${id} ended ${last?.state}: ${last?.error}`);
  return last;
}

/** Runs the Docker comparison and prints its table. */
export async function dockerBench(rounds: number, grace: number): Promise<void> {
  const env = sandboxEnv();
  const rt = new DockerRuntime(env.dockerHost);
  const docker = dockerClient(env.dockerHost);
  try {
    await rt.version();
  } catch (err) {
    throw new Error(`the sandbox dockerd is not reachable (${String(err)}); run \`sudo scripts/sandbox up\` first`);
  }
  const fixture = new DockerPodFixture(env.dockerHost);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-bench-docker-'));
  const noKube = { ...process.env };
  delete noKube.KUBECONFIG;
  const agent = await launchAgent(work, 'agent', ['--runtime', 'docker', '--docker-host', env.dockerHost, '--log-level', 'debug', '--log-format', 'json', '--min-ready', '0'], noKube);
  let pod: TestPod | undefined;
  try {
    pod = await fixture.create({
      name: 'target',
      namespace: 'bench',
      containers: ['app', 'sidecar', 'logger'].map((n) => ({ name: n, image: env.images.appV1 })),
      volume: { hostPath: fs.mkdtempSync(path.join(work, 'vol-')), mountPath: '/data' },
    });
    const podId = pod.podId;
    const base = { images: {}, graceSeconds: grace, graceSet: true, minReadyMs: '0', minReadySet: true, timeoutMs: '0' };
    const app = async () => {
      const c = (await rt.listContainers({ podId })).find((x) => x.name === 'app' && x.state === 'running');
      if (!c) throw new Error('the app container is not running');
      return c;
    };
    const viaAgent = async () => {
      const t0 = now();
      const op = await waitEnd(agent.client, (await agent.client.restart({ ...base, pod: pod!.name, containers: ['app'] })).id);
      return { ms: now() - t0, down: op.containers[0].downtimeMs ?? NaN, id: op.id };
    };
    const viaRestart = async () => {
      const c = await app();
      const t0 = now();
      await docker.getContainer(c.id).restart({ t: grace });
      const ms = now() - t0;
      return { ms, down: ms, id: '' };
    };
    const viaRecreate = async () => {
      const c = await app();
      const det = await rt.inspectContainer(c.id);
      const t0 = now();
      await rt.stopContainer(c.id, grace);
      await rt.removeContainer(c.id);
      const id = await rt.createContainer(podId, det.spec, det.runtimeName);
      await rt.startContainer(id);
      const ms = now() - t0;
      return { ms, down: ms, id: '' };
    };
    // Warm-up: one of each, so first-call costs (connections, page cache) are not measured.
    await viaAgent();
    await viaRestart();
    await viaRecreate();
    type Round = { ms: number; down: number; id: string };
    const got = { a: [] as Round[], b: [] as Round[], c: [] as Round[] };
    for (let r = 0; r < rounds; r++) {
      got.a.push(await viaAgent());
      got.b.push(await viaRestart());
      got.c.push(await viaRecreate());
      process.stderr.write(`  round ${r + 1}/${rounds}\r`);
    }
    process.stderr.write('\n');
    const t = (k: 'a' | 'b' | 'c') => median(got[k].map((x) => x.ms));
    const d = (k: 'a' | 'b' | 'c') => median(got[k].map((x) => x.down));
    const v = await rt.version();
    const out = [
      `Docker restart benchmark: dockerd ${v.version}, ${rounds} rounds interleaved, 3-container pod, grace ${grace}s, image present, load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} CPUs`,
      `  (a) agent restart through the API        median ${fmt(t('a'))} ${range(got.a.map((x) => x.ms))}; downtime median ${fmt(d('a'))}`,
      `  (b) docker restart                        median ${fmt(t('b'))} ${range(got.b.map((x) => x.ms))}; downtime = its time`,
      `  (c) compose recreate (stop, rm, run)      median ${fmt(t('c'))} ${range(got.c.map((x) => x.ms))}; downtime = its time`,
      `  time      a/b = ${(t('a') / t('b')).toFixed(2)}   a/c = ${(t('a') / t('c')).toFixed(2)}`,
      `  downtime  a/b = ${(d('a') / d('b')).toFixed(2)}   a/c = ${(d('a') / d('c')).toFixed(2)}`,
      `  agent RSS after the run ${rssMiB(agent.child.pid!).toFixed(1)} MiB`,
      `  (a), where the agent's time went (its own clock, from the request's arrival; the client's two calls are not in it):`,
      ...traceSummary(agent.logFile, got.a.map((x) => x.id)),
    ];
    process.stdout.write(out.join('\n') + '\n');
  } finally {
    if (pod) await fixture.remove(pod).catch(() => undefined);
    await agent.stop();
    fixture.close();
    rt.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}
