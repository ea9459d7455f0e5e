// `npm run bench:rss`: the agent's idle memory as installed (the node flags of its shebang), on containerd and on
// dockerd, and in Kubernetes mode when given a cluster; each against the floor of a bare node process with the
// same flags, measured in the same run, rounds interleaved. Needs the sandbox up (`sudo scripts/sandbox up`).
//
//   --rounds N                     agent starts per setup (default 5); the median is reported
//   --settle S                     seconds an agent sits idle after its API first answers (default 12: V8's
//                                  memory reducer has run by then)
//   --kubeconfig F --node-name N   also an agent in Kubernetes mode for node N, on the runtime of
//                                  INPLACE_KUBE_SANDBOX_DIR (default /tmp/inplace-kube), the kube sandbox's node;
//                                  its ContainerRestart watch is kept to an empty namespace, so that it takes no
//                                  request of anyone else's (name a node without pods to leave theirs alone too)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sandboxEnv } from '../test/testbed/sandbox-env.js';
import { agentNodeFlags, launchAgent, rssMiB } from './agent-launch.js';

const { values: flags } = parseArgs({
  options: { rounds: { type: 'string' }, settle: { type: 'string' }, kubeconfig: { type: 'string' }, 'node-name': { type: 'string' } },
});
const ROUNDS = Number(flags.rounds ?? 5);
const SETTLE_MS = Number(flags.settle ?? 12) * 1000;
if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || !(SETTLE_MS >= 0)) throw new Error('--rounds takes a whole number >= 1, --settle seconds >= 0');
if (flags.kubeconfig && !flags['node-name']) throw new Error('--kubeconfig needs --node-name');

const env = sandboxEnv();
const kubeRuntime = sandboxEnv({ INPLACE_SANDBOX_DIR: process.env.INPLACE_KUBE_SANDBOX_DIR ?? '/tmp/inplace-kube' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
/** The median of ten samples over a second: one reading, without a GC's moment in it. */
async function idleRss(pid: number): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < 10; i++) {
    xs.push(rssMiB(pid));
    await sleep(100);
  }
  return median(xs);
}

interface Setup {
  name: string;
  target: number;
  /** Arguments of the agent; undefined for the bare node floor. */
  args?: string[];
}

const noKube = { ...process.env };
delete noKube.KUBECONFIG;
const setups: Setup[] = [
  { name: 'node floor (no agent: node with the same flags, idle)', target: Infinity },
  { name: `agent on containerd (${env.criEndpoint})`, target: 64, args: ['--runtime', 'cri', '--cri-endpoint', env.criEndpoint] },
  { name: `agent on dockerd (${env.dockerHost})`, target: 64, args: ['--runtime', 'docker', '--docker-host', env.dockerHost] },
];
if (flags.kubeconfig) {
  setups.push({
    name: `agent in Kubernetes mode, node ${flags['node-name']} (${kubeRuntime.criEndpoint})`,
    target: 96,
    args: ['--runtime', 'cri', '--cri-endpoint', kubeRuntime.criEndpoint, '--kubeconfig', flags.kubeconfig, '--node-name', flags['node-name'] ?? '', '--watch-namespace', 'inplace-bench-rss-idle'],
  });
}

async function measure(work: string, s: Setup, round: number): Promise<number> {
  if (!s.args) {
    const child = spawn(process.execPath, [...agentNodeFlags(), '-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
    await sleep(SETTLE_MS);
    const rss = await idleRss(child.pid!);
    child.kill('SIGTERM');
    return rss;
  }
  const agent = await launchAgent(work, `rss-${round}-${setups.indexOf(s)}`, [...s.args, '--log-level', 'warn'], noKube);
  try {
    await sleep(SETTLE_MS);
    return await idleRss(agent.child.pid!);
  } finally {
    await agent.stop();
  }
}

async function main(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-rss-'));
  const load0 = os.loadavg()[0];
  const got = setups.map(() => [] as number[]);
  try {
    for (let r = 0; r < ROUNDS; r++) {
      for (const [i, s] of setups.entries()) got[i].push(await measure(work, s, r));
      process.stderr.write(`  round ${r + 1}/${ROUNDS}\r`);
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  process.stderr.write('\n');
  const floor = median(got[0]);
  const out = [
    `idle RSS, node ${process.version} ${agentNodeFlags().join(' ')}, ${ROUNDS} starts each, interleaved, ${SETTLE_MS / 1000} s idle; load average ${load0.toFixed(1)} -> ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} CPUs`,
  ];
  for (const [i, s] of setups.entries()) {
    const m = median(got[i]);
    const range = `(${Math.min(...got[i]).toFixed(1)}-${Math.max(...got[i]).toFixed(1)})`;
    if (i === 0) {
      out.push(`  ${s.name}: ${m.toFixed(1)} MiB ${range}`);
    } else {
      const verdict = m <= s.target ? 'met' : 'MISSED';
      out.push(`  ${s.name}: ${m.toFixed(1)} MiB ${range}, ${(m / floor).toFixed(2)}x the floor (+${(m - floor).toFixed(1)} MiB); target <= ${s.target}: ${verdict}`);
    }
  }
  process.stdout.write(out.join('\n') + '\n');
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench:rss failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
