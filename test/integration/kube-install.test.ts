// The install as deploy/ ships it (scripts/kube-deploy-agent applied it to the shared cluster), checked on the
// running cluster: the namespace enforces the privileged Pod Security level, each node's agent process runs with
// no capability, no_new_privs and a seccomp filter (read from /proc on this machine, where the test cluster's
// nodes run), and its settled memory (VmRSS) stays under the memory request of deploy/daemonset.yaml. And the Helm
// chart's rendering is accepted by this API server (a server-side dry run: validation, defaulting and admission,
// Pod Security among them, with nothing stored); helm-install.test.ts installs, upgrades and uninstalls it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { kubeEnv } from '../testbed/kube-env.js';
import { testKubeConfig } from '../support/kube-apply.js';
import { requireRuntime } from '../support/require-runtime.js';
import { AGENT_DS, daemonSetAgent } from '../support/daemonset-agent.js';
import { ctl } from '../support/agent-process.js';
import { parseBytes } from '../../src/bytes.js';
import { buildDepsDir } from '../support/build-deps.js';
import { agentOf, renderDeploy, REPO_ROOT } from '../support/deploy-render.js';

const env = kubeEnv();
/** The image's working directory (deploy/Dockerfile, scripts/kube-deploy-agent): how the agent processes are told apart. */
const IMAGE_WORKDIR = '/opt/inplace-agent';

/** How long an agent runs before its memory counts as settled, s; the samples of it then taken, one a second. */
const SETTLE_S = 20;
const SAMPLES = 5;
/** Clock ticks per second of /proc/PID/stat's start time (USER_HZ, 100 on Linux). */
const CLK_TCK = 100;

/** The DaemonSet's agent process of each node on this machine: pid by NODE_NAME in its environment. */
function agentProcesses(): Map<string, number> {
  const found = new Map<string, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) !== IMAGE_WORKDIR) continue;
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('dist/src/daemon/main.js')) continue;
      const node = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').find((v) => v.startsWith('NODE_NAME='))?.slice('NODE_NAME='.length);
      if (node) found.set(node, Number(entry));
    } catch {
      // a process that ended while being read
    }
  }
  return found;
}

/** The fields of /proc/PID/status. */
function procStatus(pid: number): Record<string, string> {
  return Object.fromEntries(readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').filter(Boolean).map((l) => {
    const i = l.indexOf(':');
    return [l.slice(0, i), l.slice(i + 1).trim()];
  }));
}

describe('the install as shipped, on the running cluster (DaemonSet of scripts/kube-deploy-agent)', function () {
  this.timeout(60_000);
  let kc: k8s.KubeConfig;

  before(async function () {
    const maybe = testKubeConfig();
    await requireRuntime(this, 'the test cluster (scripts/kube-sandbox)', async () => {
      if (!maybe) throw new Error('no kubeconfig (scripts/kube-sandbox up)');
      await maybe.makeApiClient(k8s.CoreV1Api).readNamespace({ name: AGENT_DS.namespace });
    });
    kc = maybe as k8s.KubeConfig;
  });

  it('the namespace enforces the privileged Pod Security level, so its host network and hostPaths are admitted anywhere', async () => {
    const ns = await kc.makeApiClient(k8s.CoreV1Api).readNamespace({ name: AGENT_DS.namespace });
    assert.equal(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce'], 'privileged');
  });

  it('each node\'s agent runs with no capability, no_new_privs and a seccomp filter, and serves', async () => {
    const procs = agentProcesses();
    for (const { name } of env.nodes) {
      await daemonSetAgent(kc, name); // its pod is Ready: it started and answers its probes this way
      const pid = procs.get(name);
      assert.ok(pid, `the agent process of node ${name} (cwd ${IMAGE_WORKDIR}) on this machine; found ${[...procs.keys()].join(', ') || 'none'}`);
      const st = procStatus(pid);
      for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) assert.equal(st[set], '0000000000000000', `${name}: ${set}`);
      assert.equal(st.NoNewPrivs, '1', `${name}: no_new_privs (allowPrivilegeEscalation: false)`);
      assert.equal(st.Seccomp, '2', `${name}: a seccomp filter (RuntimeDefault)`);
    }
  });

  it('inplacectl version names the cluster\'s version and the five admission holds the install gives it, none off', async () => {
    const agent = await daemonSetAgent(kc);
    const want = (await kc.makeApiClient(k8s.VersionApi).getCode()).gitVersion;
    // Read in the background at the agent's start: asked until the read has ended.
    let out: { cluster?: { kubernetesVersion: string; active: string[]; off: string[] } } = {};
    for (let i = 0; i < 50 && !out.cluster; i++) {
      const res = await ctl(agent.socket, 'version', '-o', 'json');
      assert.equal(res.code, 0, res.stderr);
      out = JSON.parse(res.stdout) as typeof out;
      if (!out.cluster) await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(out.cluster?.kubernetesVersion, want);
    assert.equal(out.cluster?.active.length, 5, JSON.stringify(out.cluster));
    assert.deepEqual(out.cluster?.off, []);
    const text = await ctl(agent.socket, 'version');
    assert.match(text.stdout, new RegExp(`\\nKubernetes: ${want.replace(/\./g, '\\.')}\\n  active: Deployment held at admission`));
  });

  it("each node's agent at rest holds less resident memory than the memory request of deploy/daemonset.yaml", async () => {
    // The request and limit as shipped (the rendered manifest), not as whoever deployed last left them.
    const { resources } = agentOf(renderDeploy()).agent;
    const request = parseBytes(String(resources?.requests?.memory));
    const limit = parseBytes(String(resources?.limits?.memory));
    assert.ok(request > 0 && limit > request, JSON.stringify(resources));
    for (const { name } of env.nodes) await daemonSetAgent(kc, name); // Ready: started, connected, recovered
    const procs = agentProcesses();
    // Settled: each process up for SETTLE_S at least (start-up's peak behind it), then its VmRSS (anonymous and
    // file-backed pages, the node binary's among them) read SAMPLES times a second apart; the highest counts.
    const started = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[19]) / CLK_TCK;
    const uptime = () => Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    const youngest = Math.max(...[...procs.values()].map(started));
    const wait = youngest + SETTLE_S - uptime();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait * 1000));
    const rss: Record<string, number> = {};
    for (let i = 0; i < SAMPLES; i++) {
      for (const { name } of env.nodes) {
        const pid = procs.get(name);
        assert.ok(pid, `the agent process of node ${name}`);
        rss[name] = Math.max(rss[name] ?? 0, parseBytes(procStatus(pid).VmRSS.replace(/ kB$/, 'Ki')));
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
    const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;
    const seen = Object.entries(rss).map(([n, b]) => `${n} ${mib(b)}`).join(', ');
    for (const [name, bytes] of Object.entries(rss)) assert.ok(bytes < request, `${name}: VmRSS ${mib(bytes)} must be under the request ${mib(request)} (${seen})`);
  });

  for (const [what, set] of [['the defaults', []], ['Kubernetes 1.30-1.35, CRI-O, metrics on the node IP and the fleet RBAC', ['admissionPolicies.mutating=false', 'runtime=crio', 'metrics.onNodeIP=true', 'fleetPrewarmRBAC=true']]] as const) {
    it(`the Helm chart with ${what}: every object accepted by the API server (server-side dry run)`, () => {
      const helm = buildDepsDir('helm');
      assert.ok(helm, 'helm is not built: run scripts/build-deps helm');
      const rendered = execFileSync(path.join(helm, 'helm'), ['template', 'inplace-agent', path.join(REPO_ROOT, 'deploy/helm/inplace-agent'), '--kube-version', '1.36.0', '--set', 'image.repository=registry.example.com/inplace-agent', ...set.flatMap((v) => ['--set', v])], { encoding: 'utf8' });
      const kinds = [...rendered.matchAll(/^kind: (\w+)$/gm)].length;
      const out = execFileSync(path.join(env.binDir, 'kubectl'), ['--kubeconfig', env.kubeconfig, 'apply', '--dry-run=server', '-f', '-'], { input: rendered, encoding: 'utf8' });
      const lines = out.trim().split('\n').filter((l) => / \(server dry run\)$/.test(l));
      assert.equal(lines.length, kinds, `one "(server dry run)" line per object:\n${out}`);
      assert.ok(lines.some((l) => l.startsWith('daemonset.apps/inplace-agent ')), out);
    });
  }
});
