// Fleet pre-warm against the real API server of the sandbox cluster: four agents, each playing one node
// (a bare Node object) with its own containerd, pull through per-node counting proxies in front of one real
// registry, so the order and overlap of every node's blob downloads is observed, not inferred. The agents run with
// deploy/'s roles and the optional fleet RBAC, rules exactly as shipped (not as admin), bound to a ServiceAccount
// of this run's own; every cluster-wide name is the run's own, so concurrent runs and benches do not collide.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { stableOrder } from '../../src/controllers/image-prewarm/node-order.js';
import { ContainerdClient } from '../../src/runtime/containerd/client.js';
import { PINNED_LABEL } from '../../src/runtime/cri/pin-image.js';
import { PIN_OWNER_PREFIX } from '../../src/runtime/cri/pin-owners.js';
import type { ImagePrewarm, ImagePrewarmSpec, NodePrewarm, NodePrewarmEntry } from '../../src/controllers/image-prewarm/types.js';
import { ctl, startAgent, type AgentProcess, type CtlResult } from '../support/agent-process.js';
import { applyCrds, deleteNodes, ensureNamespace, ensureNode, testKubeConfig } from '../support/kube-apply.js';
import { deleteNamespace } from '../support/kube-cluster.js';
import { ownAgentIdentity, type OwnAgentIdentity } from '../support/own-agent-identity.js';
import { startMiniContainerd, type MiniContainerd } from '../support/mini-containerd.js';
import { buildImage, buildLayer, pushImage, seededBytes } from '../support/registry-images.js';
import { startRegistryProxy, type RegistryProxy } from '../support/registry-proxy.js';
import { startRegistry, type RegistryServer } from '../support/registry-server.js';
import { requireRuntime } from '../support/require-runtime.js';
import { kubeEnv } from '../testbed/kube-env.js';

const G = { group: 'inplace-agent.io', version: 'v1alpha1' };
const run = randomBytes(3).toString('hex');
// Every cluster-wide name is this run's own (Nodes, their records, ImagePrewarms, the namespace), so that two
// runs, or this test beside a bench, never share or delete each other's objects.
const N = { a: `ipf-${run}-a`, b: `ipf-${run}-b`, c: `ipf-${run}-c`, d: `ipf-${run}-d` };
const NODES = [N.a, N.b, N.c, N.d];
const NS = `inplace-fleet-${run}`;
const NODE_LABEL = 'inplace-agent.test/fleet';
/** This run's ImagePrewarm of a base name. */
const P = (name: string) => `${name}-${run}`;
const KUBECONFIG = kubeEnv().kubeconfig;

interface Download {
  node: string;
  digest: string;
  start: number;
  end: number;
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** inplacectl prewarm ...: talks to the API server only, so no agent socket is involved. */
function ctlKube(...args: string[]): Promise<CtlResult> {
  return ctl('unix:///nonexistent/agent.sock', ...args);
}

/** The most nodes whose download windows (first blob start to last blob end) overlap at one moment. */
function peakOverlap(windows: { start: number; end: number }[]): number {
  const edges = windows.flatMap((w) => [
    { t: w.start, d: 1 },
    { t: w.end, d: -1 },
  ]);
  edges.sort((a, b) => a.t - b.t || a.d - b.d);
  let cur = 0;
  let peak = 0;
  for (const e of edges) {
    cur += e.d;
    peak = Math.max(peak, cur);
  }
  return peak;
}

describe('fleet pre-warm: ImagePrewarm across 4 agents on the real API server, each with its own containerd 1.6', function () {
  this.timeout(240_000);
  let kc: k8s.KubeConfig;
  let custom: k8s.CustomObjectsApi;
  let coord: k8s.CoordinationV1Api;
  let core: k8s.CoreV1Api;
  let registry: RegistryServer;
  let authRegistry: RegistryServer;
  const proxies = new Map<string, RegistryProxy>();
  const containerds = new Map<string, MiniContainerd>();
  const agents = new Map<string, AgentProcess>();
  /** Every agent process started, restarted ones included (their logs are read at the end). */
  const everyAgent: { node: string; a: AgentProcess }[] = [];
  const stateDirs = new Map<string, string>();
  const downloads: Download[] = [];
  const created: string[] = [];
  const password = `pw-${randomBytes(8).toString('hex')}`;
  /** The agents' kubeconfig: the shipped ServiceAccount's token. */
  let agentKc = '';
  /** The agents' identity: deploy/'s roles bound to a ServiceAccount of this run's own (own-agent-identity.ts). */
  let identity: OwnAgentIdentity | undefined;

  async function image(name: string, target = registry): Promise<{ ref: string; layer: string }> {
    const layer = buildLayer([{ path: `data/${name}`, data: seededBytes(`${run}-${name}`, 1024 * 1024) }]);
    const img = buildImage([layer], `${run}-${name}`);
    const ref = await pushImage({ registry: target.host, basicAuth: target === authRegistry ? `fleet:${password}` : undefined }, `fleet/${name}`, run, img);
    return { ref, layer: layer.digest };
  }

  async function agentFor(node: string): Promise<AgentProcess> {
    const c = containerds.get(node)!;
    const a = await startAgent(
      ['--runtime', 'cri', '--cri-endpoint', c.endpoint, '--kubeconfig', agentKc, '--node-name', node, '--fleet-namespace', NS, '--fleet-lease-duration', '3s', '--fleet-poll', '300ms', '--fleet-backoff', '500ms'],
      { stateDir: stateDirs.get(node) },
    );
    stateDirs.set(node, a.stateDir);
    agents.set(node, a);
    everyAgent.push({ node, a });
    return a;
  }

  async function createPrewarm(name: string, spec: ImagePrewarmSpec): Promise<void> {
    await custom.createClusterCustomObject({ ...G, plural: 'imageprewarms', body: { apiVersion: 'inplace-agent.io/v1alpha1', kind: 'ImagePrewarm', metadata: { name }, spec } });
    created.push(name);
  }

  async function entry(node: string, prewarm: string): Promise<NodePrewarmEntry | undefined> {
    try {
      const np = (await custom.getClusterCustomObject({ ...G, plural: 'nodeprewarms', name: node })) as NodePrewarm;
      return np.status?.prewarms?.[prewarm];
    } catch {
      return undefined;
    }
  }

  async function allDone(prewarm: string, nodes: string[], phase: 'Succeeded' | 'Failed', timeoutMs = 60_000): Promise<NodePrewarmEntry[]> {
    return waitFor(
      `${prewarm} ${phase} on ${nodes.join(', ')}`,
      async () => {
        const es = await Promise.all(nodes.map((n) => entry(n, prewarm)));
        return es.every((e) => e?.phase === phase) ? (es as NodePrewarmEntry[]) : undefined;
      },
      timeoutMs,
    );
  }

  before(async function () {
    const maybe = testKubeConfig();
    await requireRuntime(this, 'the test cluster (scripts/kube-sandbox)', async () => {
      if (!maybe) throw new Error(`no kubeconfig at ${KUBECONFIG} (scripts/kube-sandbox up)`);
      await maybe.makeApiClient(k8s.CoreV1Api).listNamespace({ limit: 1 });
    });
    kc = maybe!;
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    coord = kc.makeApiClient(k8s.CoordinationV1Api);
    core = kc.makeApiClient(k8s.CoreV1Api);
    await applyCrds(kc, ['imageprewarm.yaml', 'nodeprewarm.yaml']);
    await ensureNamespace(kc, NS);
    // The agents' roles as deploy/ ships them (the optional fleet RBAC included), bound to a ServiceAccount of this
    // run's own in its own fleet namespace: the shipped ServiceAccount's grants, which the DaemonSet, other tests
    // and benches share, are left as they are, and the Leases stay apart from the DaemonSet's.
    identity = await ownAgentIdentity(kc, NS, run);
    agentKc = identity.kubeconfig;
    for (const n of NODES) await ensureNode(kc, n, { [NODE_LABEL]: run });
    registry = await startRegistry();
    authRegistry = await startRegistry({ basicAuth: { username: 'fleet', password } });
    for (const n of NODES) {
      const p = await startRegistryProxy(registry.host, (d) => downloads.push({ node: n, ...d }));
      p.setRate(512 * 1024); // a 1 MiB layer takes about 2 s: long enough to see who overlaps whom
      proxies.set(n, p);
      containerds.set(n, await startMiniContainerd(`/tmp/ipf-${run}-${n.slice(-1)}`, { [registry.host]: p.host, [authRegistry.host]: authRegistry.host }));
    }
    for (const n of NODES) await agentFor(n);
  });

  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return;
    for (const [n, a] of agents) process.stderr.write(`--- agent ${n} (last lines)\n${a.log().split('\n').slice(-25).join('\n')}\n`);
  });

  after(async function () {
    for (const a of agents.values()) await a.stop().catch(() => undefined);
    for (const c of containerds.values()) await c.stop().catch(() => undefined);
    for (const p of proxies.values()) await p.close().catch(() => undefined);
    await registry?.stop();
    await authRegistry?.stop();
    if (!custom) return;
    for (const name of created) await custom.deleteClusterCustomObject({ ...G, plural: 'imageprewarms', name }).catch(() => undefined);
    for (const n of NODES) await custom.deleteClusterCustomObject({ ...G, plural: 'nodeprewarms', name: n }).catch(() => undefined);
    await deleteNodes(kc, NODES);
    await identity?.remove();
    await deleteNamespace(kc, NS);
  });

  it('4 nodes, maxParallelNodes 2, seedNodes 1: the seed downloads first and alone, never more than 2 pull at once, all Succeeded, status 4/4', async () => {
    const { ref, layer } = await image('fanout');
    await createPrewarm(P('fanout'), { images: [ref], nodeSelector: { [NODE_LABEL]: run }, maxParallelNodes: 2, seedNodes: 1 });
    const entries = await allDone(P('fanout'), NODES, 'Succeeded');
    for (const e of entries) assert.match(e.images[0]!.digest ?? '', /@sha256:[a-f0-9]{64}$/);

    const mine = downloads.filter((d) => d.digest === layer);
    assert.deepEqual(new Set(mine.map((d) => d.node)), new Set(NODES), 'every node downloaded the layer through its own proxy');
    const seed = stableOrder(P('fanout'), NODES)[0]!;
    const seedEnd = Math.max(...mine.filter((d) => d.node === seed).map((d) => d.end));
    const othersStart = Math.min(...mine.filter((d) => d.node !== seed).map((d) => d.start));
    assert.ok(seedEnd <= othersStart, `the seed ${seed} finished its download (${seedEnd}) before any other node started (${othersStart})`);
    const windows = NODES.map((n) => {
      const ds = downloads.filter((d) => d.node === n);
      return { start: Math.min(...ds.filter((d) => d.digest === layer).map((d) => d.start)), end: Math.max(...ds.filter((d) => d.digest === layer).map((d) => d.end)) };
    });
    const peak = peakOverlap(windows);
    assert.ok(peak <= 2, `at most 2 nodes downloaded at once (peak ${peak})`);
    assert.equal(peak, 2, 'after the seed, two nodes pulled side by side');
    // The last node waited for a slot: it saw the first one given back through its watch of the slot Leases and
    // took it then, not at its next poll (after a failed try the agent polls only every 30 s, as a fallback).
    const byStart = NODES.map((n, i) => ({ n, ...windows[i]! })).sort((a, b) => a.start - b.start);
    const last = byStart[3]!;
    const firstFreed = Math.min(...byStart.slice(1, 3).map((w) => w.end));
    assert.ok(last.start - firstFreed < 10_000, `${last.n} started ${last.start - firstFreed} ms after the first fan-out slot was given back`);

    const text = await ctlKube('prewarm', 'status', P('fanout'), '--kubeconfig', KUBECONFIG);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^${P('fanout')}: 4/4 nodes done, 0 pulling, 0 waiting, 0 failed`, 'm'));
    const json = await ctlKube('-o', 'json', 'prewarm', 'status', P('fanout'), '--kubeconfig', KUBECONFIG);
    assert.equal((JSON.parse(json.stdout) as { succeeded: number }).succeeded, 4);
    const summary = await waitFor('the summary in ImagePrewarm.status', async () => {
      const pw = (await custom.getClusterCustomObject({ ...G, plural: 'imageprewarms', name: P('fanout') })) as ImagePrewarm;
      return pw.status?.succeeded === 4 ? pw.status : undefined;
    }, 20_000);
    assert.equal(summary.desired, 4);
    assert.equal(summary.summarizedBy, seed, 'the first node in the stable order writes the summary');
  });

  it('an agent SIGKILLed while it holds a slot: the Lease expires, another node proceeds, and the killed one finishes after it starts again', async () => {
    for (const p of proxies.values()) p.setRate(256 * 1024); // about 4 s a pull
    const { ref } = await image('kill');
    await createPrewarm(P('kill'), { images: [ref], nodeSelector: { [NODE_LABEL]: run }, maxParallelNodes: 1 });
    // Killed mid-pull: once it holds the slot and has recorded Pulling (the record is written alongside the pull,
    // so a kill right after the Lease appears could land before it).
    const holder = await waitFor('a holder of kill-slot-0 recorded Pulling', async () => {
      const l = await coord.readNamespacedLease({ name: `${P('kill')}-slot-0`, namespace: NS }).catch(() => undefined);
      const h = l?.spec?.holderIdentity;
      return h && (await entry(h, P('kill')))?.phase === 'Pulling' ? h : undefined;
    }, 30_000);
    agents.get(holder)!.child.kill('SIGKILL');
    await agents.get(holder)!.exited;
    const next = await waitFor('another node taking the slot after the lease expired', async () => {
      const l = await coord.readNamespacedLease({ name: `${P('kill')}-slot-0`, namespace: NS }).catch(() => undefined);
      const h = l?.spec?.holderIdentity;
      return h && h !== holder ? h : undefined;
    }, 30_000);
    assert.notEqual(next, holder);
    assert.equal((await entry(holder, P('kill')))?.phase, 'Pulling', 'the killed node is recorded mid-pull');
    await agentFor(holder);
    await allDone(P('kill'), NODES, 'Succeeded', 90_000);
    for (const p of proxies.values()) p.setRate(512 * 1024);
  });

  it('a bad tag: every node ends Failed with the reason, after bounded retries with back-off', async () => {
    const bad = `${registry.host}/fleet/none:missing-${run}`;
    await createPrewarm(P('badtag'), { images: [bad], nodeSelector: { [NODE_LABEL]: run }, maxParallelNodes: 4, backoffLimit: 1 });
    const entries = await allDone(P('badtag'), NODES, 'Failed', 60_000);
    for (const e of entries) {
      assert.equal(e.images[0]!.attempts, 2, 'one try and one retry (backoffLimit 1)');
      assert.match(e.images[0]!.message ?? '', /not found/i);
      assert.match(e.images[0]!.message ?? '', /after 2 attempts/);
      assert.equal(e.images[0]!.reason, 'ImagePullFailed');
    }
    const st = await ctlKube('prewarm', 'status', P('badtag'), '--watch', '--kubeconfig', KUBECONFIG);
    assert.equal(st.code, 1, 'status --watch exits 1 when nodes failed');
    assert.match(st.stdout, /0\/4 nodes done, 0 pulling, 0 waiting, 4 failed/);
    for (const n of NODES) assert.match(st.stdout, new RegExp(`failed: ${n}: ImagePullFailed: .*not found`, 'i'));
  });

  it('targets within maxParallelNodes and no seeds: every node pulls at once and no slot Lease is ever created', async () => {
    const { ref, layer } = await image('fit');
    const added: string[] = [];
    const watch = await new k8s.Watch(kc).watch(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, {}, (type: string, l: k8s.V1Lease) => {
      if (type === 'ADDED' && (l.metadata?.name ?? '').startsWith(P('fit'))) added.push(l.metadata?.name ?? '');
    }, () => undefined);
    try {
      await createPrewarm(P('fit'), { images: [ref], nodeSelector: { [NODE_LABEL]: run }, maxParallelNodes: NODES.length });
      await allDone(P('fit'), NODES, 'Succeeded');
    } finally {
      watch.abort();
    }
    assert.deepEqual(added, [], 'no slot Lease: every target fits in maxParallelNodes');
    assert.deepEqual(new Set(downloads.filter((d) => d.digest === layer).map((d) => d.node)), new Set(NODES), 'every node downloaded the layer itself');
  });

  it('podSelector: only the nodes running the selected pods pull', async () => {
    for (const n of [N.b, N.d]) {
      await core.createNamespacedPod({
        namespace: NS,
        body: { metadata: { name: `web-${n}`, labels: { app: `web-${run}` } }, spec: { nodeName: n, containers: [{ name: 'c', image: 'inplace/none:1' }] } },
      });
    }
    const { ref, layer } = await image('podsel');
    await createPrewarm(P('podsel'), { images: [ref], podSelector: { namespace: NS, matchLabels: { app: `web-${run}` } }, maxParallelNodes: 2 });
    await allDone(P('podsel'), [N.b, N.d], 'Succeeded');
    assert.equal(await entry(N.a, P('podsel')), undefined, 'ipf-a runs no selected pod and keeps no record');
    assert.equal(await entry(N.c, P('podsel')), undefined, 'ipf-c runs no selected pod and keeps no record');
    assert.deepEqual(new Set(downloads.filter((d) => d.digest === layer).map((d) => d.node)), new Set([N.b, N.d]));
    for (const n of [N.b, N.d]) await core.deleteNamespacedPod({ name: `web-${n}`, namespace: NS, gracePeriodSeconds: 0 }).catch(() => undefined);
  });

  it('pull secrets: credentials from a referenced Secret reach a basic-auth registry, and are never printed or logged', async () => {
    const { ref } = await image('secret', authRegistry);
    const cfg = JSON.stringify({ auths: { [authRegistry.host]: { auth: Buffer.from(`fleet:${password}`).toString('base64') } } });
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: `regcred-${run}` }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from(cfg).toString('base64') } } });
    await createPrewarm(P('secret'), { images: [ref], nodeSelector: { [NODE_LABEL]: run }, maxParallelNodes: 4, imagePullSecrets: [{ namespace: NS, name: `regcred-${run}` }] });
    await allDone(P('secret'), NODES, 'Succeeded');
    const b64 = Buffer.from(`fleet:${password}`).toString('base64');
    for (const [n, a] of agents) {
      assert.ok(!a.log().includes(password) && !a.log().includes(b64), `agent ${n} never logged the credentials`);
      const np = await custom.getClusterCustomObject({ ...G, plural: 'nodeprewarms', name: n });
      assert.ok(!JSON.stringify(np).includes(password), `NodePrewarm ${n} holds no credentials`);
    }
    const st = await ctlKube('-o', 'json', 'prewarm', 'status', P('secret'), '--kubeconfig', KUBECONFIG);
    assert.ok(!st.stdout.includes(password));
  });

  it('refresh: an image removed from a node comes back within one interval', async () => {
    const { ref } = await image('refresh');
    await createPrewarm(P('refresh'), { images: [ref], nodeSelector: { [NODE_LABEL]: run }, maxParallelNodes: 4, refreshSeconds: 10 });
    await allDone(P('refresh'), NODES, 'Succeeded');
    const c = containerds.get(N.c)!;
    const rm = spawnSync('ctr', ['-a', c.socket, '-n', 'k8s.io', 'images', 'rm', ref], { encoding: 'utf8' });
    assert.equal(rm.status, 0, rm.stderr);
    const gone = spawnSync('ctr', ['-a', c.socket, '-n', 'k8s.io', 'images', 'ls', '-q'], { encoding: 'utf8' }).stdout;
    assert.ok(!gone.split('\n').includes(ref), 'the image is gone from ipf-c');
    const removedAt = Date.now();
    await waitFor('the image back on ipf-c', async () => spawnSync('ctr', ['-a', c.socket, '-n', 'k8s.io', 'images', 'ls', '-q'], { encoding: 'utf8' }).stdout.split('\n').includes(ref) || undefined, 25_000);
    assert.ok(Date.now() - removedAt <= 10_000 + 8_000, 'back within one refresh interval (plus a poll and the pull)');
    await allDone(P('refresh'), [N.c], 'Succeeded', 10_000);
  });

  it('pin: each prewarm pins the image for itself; deleting one leaves it pinned for the other, deleting both unpins it on every node', async () => {
    const { ref } = await image('pin');
    for (const name of [P('pin1'), P('pin2')]) await createPrewarm(name, { images: [ref], nodeSelector: { [NODE_LABEL]: run }, maxParallelNodes: 4, pin: true });
    await allDone(P('pin1'), NODES, 'Succeeded');
    await allDone(P('pin2'), NODES, 'Succeeded');
    const uid = async (name: string) => ((await custom.getClusterCustomObject({ ...G, plural: 'imageprewarms', name })) as ImagePrewarm).metadata.uid ?? '';
    const [u1, u2] = [await uid(P('pin1')), await uid(P('pin2'))];
    /** Per node: the pinned label and the owners on the image's tag record (containerd 1.6 keeps the label, its CRI ignores it). */
    const pins = async () => {
      const out: string[] = [];
      for (const n of NODES) {
        const records = new ContainerdClient(containerds.get(n)!.endpoint);
        try {
          const l = (await records.getImage(ref)).labels;
          const owners = Object.keys(l).filter((k) => k.startsWith(PIN_OWNER_PREFIX)).map((k) => (k.slice(PIN_OWNER_PREFIX.length) === u1 ? 'pin1' : k.slice(PIN_OWNER_PREFIX.length) === u2 ? 'pin2' : k));
          out.push(`${l[PINNED_LABEL] ?? 'unpinned'}:${owners.sort().join('+')}`);
        } finally {
          records.close();
        }
      }
      return out.join(' ');
    };
    const every = (state: string) => NODES.map(() => state).join(' ');
    assert.equal(await pins(), every('pinned:pin1+pin2'));
    await custom.deleteClusterCustomObject({ ...G, plural: 'imageprewarms', name: P('pin1') });
    await waitFor('pin1 let go on every node', async () => ((await pins()) === every('pinned:pin2') ? true : undefined), 20_000);
    await custom.deleteClusterCustomObject({ ...G, plural: 'imageprewarms', name: P('pin2') });
    await waitFor('the image unpinned on every node', async () => ((await pins()) === every('unpinned:') ? true : undefined), 20_000);
  });

  // Last, over everything the agents did above: the shipped roles are enough. (A missing verb need not fail a
  // scenario: the slot watch, refused, falls back to listing; it shows here.)
  it("with deploy/'s roles as shipped, the API server refused the agents nothing", () => {
    for (const { node, a } of everyAgent) {
      // A refusal as the agent logs it: the API server's message ("... is forbidden: ...") or, with no message, the
      // status (kubeError's "HTTP 403", a code= / status= field). Not any 403: a pull's "ms=403" is a duration.
      const refused = a.log().split('\n').filter((l) => /forbidden|\bHTTP 403\b|\b(?:code|(?:http)?status(?:Code)?)\W{0,3}403\b/i.test(l));
      assert.deepEqual(refused, [], `agent ${node} was refused by the API server`);
    }
  });
});
