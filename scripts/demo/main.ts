// `npm run demo`: the quick start. Starts the private runtime sandbox (scripts/sandbox), an agent on its
// containerd, and a three-container demo pod; upgrades one container in place to a new image through
// inplacectl; prints what stayed and what changed, and how long it took. With --keep the agent and the pod
// stay up afterwards, and the inplacectl commands to try next are printed (those that work on this runtime).
// Each run gets a fresh state directory, so `ops` shows this run's operations only.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentClient } from '../../src/api/client.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { pinnedLabelSupport } from '../../src/runtime/cri/pinned-label-support.js';
import type { Container } from '../../src/runtime/types.js';
import { CriPodFixture } from '../../test/testbed/cri-pods.js';
import { sandboxEnv } from '../../test/testbed/sandbox-env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const env = sandboxEnv();
const keep = process.argv.includes('--keep');

function step(text: string): void {
  process.stdout.write(`\n== ${text}\n`);
}

async function main(): Promise<number> {
  if (process.getuid?.() !== 0) {
    process.stderr.write('demo: the sandbox runs containerd and dockerd, which need root: run `npm run demo` as root\n');
    return 1;
  }
  step('starting the runtime sandbox (containerd + CRI, dockerd, registry on 127.0.0.1)');
  const up = spawnSync('bash', [path.join(root, 'scripts/sandbox'), 'up'], { stdio: 'inherit' });
  if (up.status !== 0) return 1;

  step('starting inplace-agent on the sandbox containerd');
  const sock = path.join(env.dir, 'demo-agent.sock');
  // A fresh journal each run: operations of earlier runs (and their pods, long gone) would show in `ops`.
  const stateDir = fs.mkdtempSync(path.join(env.dir, 'demo-agent-state-'));
  const agentLog = path.join(env.dir, 'demo-agent.log');
  const logFd = fs.openSync(agentLog, 'w');
  const agent = spawn(process.execPath, [path.join(root, 'dist/src/daemon/main.js'), '--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--listen', `unix://${sock}`, '--state-dir', stateDir], {
    stdio: ['ignore', logFd, logFd],
    // With --keep the agent outlives the demo.
    detached: keep,
  });
  let kept = false;
  const rt = new CriRuntime(env.criEndpoint);
  const fixture = new CriPodFixture(env.criEndpoint);
  let podId = '';
  try {
    await waitForAgent(sock, agent.pid ?? 0, agentLog);
    process.stdout.write(`agent up: unix://${sock} (log ${agentLog})\n`);

    step('creating pod demo/web: containers app, sidecar, logger sharing a volume at /data');
    for (const old of (await rt.listPods()).filter((p) => p.name === 'demo/web')) await fixture.remove({ podId: old.id, name: old.name, containerIds: {} });
    const volume = fs.mkdtempSync(path.join(env.dir, 'demo-volume-'));
    const pod = await fixture.create({
      name: 'web',
      namespace: 'demo',
      containers: ['app', 'sidecar', 'logger'].map((name) => ({ name, image: env.images.appV1 })),
      volume: { hostPath: volume, mountPath: '/data' },
    });
    podId = pod.podId;
    const before = await snapshot(rt, pod.podId);
    const oldApp = before.containers.get('app')!;
    await rt.exec(oldApp.id, ['/bin/sh', '-c', 'echo "written by $(cat /app/version) at $(date)" > /data/note'], 10);

    step(`inplacectl restart demo/web app --image app=${env.images.appV2}`);
    const ctl = spawnSync(process.execPath, [path.join(root, 'dist/src/cli/main.js'), '--agent', `unix://${sock}`, 'restart', 'demo/web', 'app', '--image', `app=${env.images.appV2}`], { stdio: 'inherit' });
    if (ctl.status !== 0) return 1;

    const after = await snapshot(rt, pod.podId);
    const newApp = after.containers.get('app')!;
    const note = await rt.exec(newApp.id, ['/bin/cat', '/data/note'], 10);
    const version = await rt.exec(newApp.id, ['/bin/cat', '/app/version'], 10);

    step('what stayed');
    const same = (a: unknown, b: unknown) => (a === b ? 'unchanged' : 'CHANGED');
    line('pod sandbox', pod.podId.slice(0, 12), same(before.podId, after.podId));
    line('pod IP', after.ip, same(before.ip, after.ip));
    for (const n of ['sidecar', 'logger']) {
      const b = before.containers.get(n)!;
      const a = after.containers.get(n)!;
      line(`${n} id`, a.id.slice(0, 12), same(b.id, a.id));
      line(`${n} started`, a.startedAt?.toISOString() ?? '-', same(b.startedAt?.getTime(), a.startedAt?.getTime()));
    }
    line('volume /data/note', note.stdout.trim(), 'read by the new app container');
    step('what changed');
    line('app id', `${oldApp.id.slice(0, 12)} -> ${newApp.id.slice(0, 12)}`, '');
    line('app image', `${oldApp.image} -> ${newApp.image}`, `(/app/version now ${version.stdout.trim()})`);
    // The restart's own duration and downtime are in inplacectl's last lines above.
    if (keep) {
      kept = true;
      agent.unref();
      const c = new AgentClient(`unix://${sock}`);
      const lastOp = (await c.listOperations('demo/web').finally(() => c.close()))[0]?.id ?? '';
      const v = await rt.version();
      printNextSteps(sock, agent.pid ?? 0, agentLog, lastOp.slice(0, 8), stateDir, { name: v.name, version: v.version, canPin: pinnedLabelSupport(v.name, v.version) === 'live' });
      return 0;
    }
    process.stdout.write('\nThe sandbox is still up: `scripts/sandbox down` (as root) stops it. `npm run demo -- --keep` leaves the agent and the pod running to try inplacectl on.\n');
    return 0;
  } finally {
    if (!kept) {
      if (podId) await fixture.remove({ podId, name: 'demo/web', containerIds: {} }).catch(() => undefined);
      agent.kill('SIGTERM');
      if (agent.exitCode === null && agent.signalCode === null) await new Promise((r) => agent.once('exit', r));
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
    fixture.close();
    rt.close();
  }
}

/** What to try next on the kept agent and pod, with a path to inplacectl that works from this clone. */
function printNextSteps(sock: string, pid: number, log: string, opId: string, stateDir: string, runtime: { name: string; version: string; canPin: boolean }): void {
  const cli = `node ${path.relative(process.cwd(), path.join(root, 'dist/src/cli/main.js')) || 'dist/src/cli/main.js'}`;
  const lines = [
    '',
    `The agent (pid ${pid}, log ${log}) and pod demo/web are still running. Try, as root:`,
    `  export INPLACE_AGENT=unix://${sock}`,
    `  ${cli} pods`,
    `  ${cli} restart demo/web app --image app=${env.images.appV1} --min-ready 2s`,
    `  ${cli} restart demo/web sidecar logger`,
    `  ${cli} restart demo/web app --image app=${env.images.appV2} --dry-run`,
    `  ${cli} ops --pod demo/web`,
    `  ${cli} -o json get ${opId || 'OPERATION_ID'}`,
    ...(runtime.canPin
      ? [`  ${cli} pull ${env.images.busybox} --pin`]
      : [
          `  ${cli} pull ${env.images.busybox}`,
          `  (${runtime.name} ${runtime.version} cannot pin images against the kubelet's image GC; an agent started with`,
          `   --prewarm FILE pulls the images listed in FILE again whenever they are gone)`,
        ]),
    `  ${cli} version`,
    `(\`npm link\` once puts inplacectl and inplace-agent on PATH.)`,
    `Stop them: kill ${pid}; scripts/sandbox down (removes the pod with the sandbox); rm -r ${stateDir}.`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

function line(what: string, value: string, note: string): void {
  process.stdout.write(`  ${what.padEnd(18)} ${value.padEnd(40)} ${note}\n`);
}

async function snapshot(rt: CriRuntime, podId: string): Promise<{ podId: string; ip: string; containers: Map<string, Container> }> {
  const pod = await rt.getPod(podId);
  const cs = (await rt.listContainers({ podId })).filter((c) => c.state === 'running');
  return { podId: pod.id, ip: pod.ip, containers: new Map(cs.map((c) => [c.name, c])) };
}

async function waitForAgent(sock: string, pid: number, log: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (fs.existsSync(sock)) {
      const c = new AgentClient(`unix://${sock}`, 2000);
      try {
        await c.listOperations();
        return;
      } catch {
        /* not yet */
      } finally {
        c.close();
      }
    }
    try {
      process.kill(pid, 0);
    } catch {
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the agent did not come up; see ${log}:\n${fs.readFileSync(log, 'utf8').slice(-2000)}`);
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
