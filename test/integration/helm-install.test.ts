// The Helm chart installed, upgraded and removed on the 3-node cluster as an operator would, with the image CI
// tested. The kustomize install of scripts/kube-deploy-agent is removed first as it was applied (`kubectl delete
// -k` of its overlay); `helm install` of deploy/helm/inplace-agent takes the image that script built (its `image`
// command) and this sandbox's paths from the same patches as its overlay (its `post-render` command, helm's
// --post-renderer); the DaemonSet is Ready on every node (its `wait` command) and serves one ContainerRestart end
// to end; `helm upgrade` of one value (logLevel) rolls the DaemonSet on every node while that ContainerRestart
// stays; `helm uninstall` leaves nothing of the chart in the cluster (the CRDs are templates, so they go, and every
// request object with them, as with `kubectl delete -k`), and on each node the agent's hostPath directories with
// its identity and journal. Last, the kustomize install is put back exactly as scripts/kube-deploy-agent leaves
// it (`kubectl diff` of its overlay is empty), in an `after` too, for the test files that run after this one.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, type CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { containerRestart, waitForStatus } from '../support/container-restarts.js';
import { AGENT_DS, daemonSetAgent } from '../support/daemonset-agent.js';
import { REPO_ROOT } from '../support/deploy-render.js';
import { CHART, helmAsync, helmBin } from '../support/helm.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { kubeTest, until } from '../support/kube-test.js';
import { createWebPod } from '../support/kube-web-pod.js';

const env = kubeEnv();
const DEPLOY_AGENT = path.join(REPO_ROOT, 'scripts/kube-deploy-agent');
/** scripts/kube-deploy-agent's overlay (kustomization and rendered.yaml) and the agents' hostPath directories. */
const OVERLAY = path.join(env.sandbox.dir, 'kube/deploy');
const AGENT_DIRS = path.join(env.sandbox.dir, 'kube/agent');
const RELEASE = 'inplace-agent';
/** Where helm records the release: not inplace-system, which the chart itself creates and deletes. */
const RELEASE_NS = 'default';

/** Runs a program; resolves with its stdout and exit code (a non-zero exit is not an error here). */
async function run(file: string, args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(file, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? String(err), code: typeof e.code === 'number' ? e.code : -1 };
  }
}

/** Runs a program that must succeed; returns its stdout. */
async function must(file: string, args: string[]): Promise<string> {
  const r = await run(file, args);
  if (r.code !== 0) throw new Error(`${path.basename(file)} ${args.join(' ')} exited ${r.code}: ${r.stderr.trim().split('\n').slice(-10).join('\n')}`);
  return r.stdout;
}

/** helm on the test cluster. */
const helm = (args: string[]) => helmAsync([...args, '--kubeconfig', env.kubeconfig]);
const kubectl = (args: string[]) => must(path.join(env.binDir, 'kubectl'), ['--kubeconfig', env.kubeconfig, ...args]);
/** The objects of a manifest file that exist, as kind/name lines (and whether any is being deleted). */
async function existing(file: string): Promise<{ names: string[]; terminating: string[] }> {
  const out = await kubectl(['get', '-f', file, '--ignore-not-found', '-o', 'json']);
  // nothing found: kubectl prints nothing at all
  const list = (out.trim() ? JSON.parse(out) : {}) as { items?: { kind: string; metadata: { name: string; deletionTimestamp?: string } }[] };
  const items = list.items ?? [];
  return { names: items.map((o) => `${o.kind}/${o.metadata.name}`), terminating: items.filter((o) => o.metadata.deletionTimestamp).map((o) => `${o.kind}/${o.metadata.name}`) };
}

/** helm install/upgrade arguments for this sandbox: the CI image, the agents' metrics on their node's address, its paths. */
function sandboxValues(image: string): string[] {
  const at = image.lastIndexOf(':');
  return ['--set', `image.repository=${image.slice(0, at)}`, '--set', `image.tag=${image.slice(at + 1)}`, '--set', 'metrics.onNodeIP=true',
    '--post-renderer', DEPLOY_AGENT, '--post-renderer-args', 'post-render'];
}

describe('the Helm chart installed, upgraded and uninstalled on the cluster (then the kustomize install put back)', function () {
  this.timeout(300_000);
  let kc: KubeConfig;
  let core: CoreV1Api;
  let image = '';
  let ns: string | undefined;
  let tmp = '';
  /** Each node's agent identity under the kustomize install (agent-id in its hostPath state directory). */
  const ids = new Map<string, string>();
  let crUid = '';
  let operationId = '';
  let restored = false;

  /** The DaemonSet's agent pod of every node, Ready, of the DaemonSet's current template. */
  async function agentsReady(): Promise<Map<string, V1Pod>> {
    await must(DEPLOY_AGENT, ['wait']);
    const pods = new Map<string, V1Pod>();
    for (const { name } of env.nodes) {
      const a = await daemonSetAgent(kc, name);
      assert.equal(a.id, ids.get(name), `${name}: the agent keeps its identity in the hostPath state directory`);
      pods.set(name, a.pod);
    }
    return pods;
  }

  /** Whatever is left of the chart removed, then scripts/kube-deploy-agent as CI runs it. */
  async function restore(): Promise<void> {
    if ((await run(helmBin(), ['status', RELEASE, '-n', RELEASE_NS, '--kubeconfig', env.kubeconfig])).code === 0) {
      await helm(['uninstall', RELEASE, '-n', RELEASE_NS, '--wait', '--timeout', '3m']);
    }
    // kubectl apply cannot recreate what is still being deleted (the namespace, the CRDs)
    await until('the objects of the overlay not being deleted', 180_000, async () => ((await existing(path.join(OVERLAY, 'rendered.yaml'))).terminating.length ? undefined : true));
    await must(DEPLOY_AGENT, []);
    restored = true;
  }

  before(async function () {
    ({ kc, core } = await kubeTest(this));
    tmp = mkdtempSync(path.join(os.tmpdir(), 'inplace-helm-'));
    image = (await must(DEPLOY_AGENT, ['image'])).trim().split('\n').pop() ?? '';
    assert.match(image, /^127\.0\.0\.1:\d+\/inplace\/agent:[0-9a-f]+$/);
    for (const { name } of env.nodes) ids.set(name, (await daemonSetAgent(kc, name)).id);
    // The kustomize install removed the way it was applied; nothing of what its overlay rendered is left.
    await kubectl(['delete', '-k', OVERLAY, '--wait=true', '--timeout=180s']);
    assert.deepEqual((await existing(path.join(OVERLAY, 'rendered.yaml'))).names, []);
  });

  after(async () => {
    try {
      if (!restored) await restore();
    } finally {
      if (ns) await deleteNamespace(kc, ns);
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('helm install: the DaemonSet Ready on every node with the CI image, each agent with its identity', async () => {
    await helm(['install', RELEASE, CHART, '-n', RELEASE_NS, ...sandboxValues(image)]);
    const pods = await agentsReady();
    for (const [node, pod] of pods) assert.equal(pod.spec?.containers.find((c) => c.name === 'agent')?.image, image, node);
    const ds = await kc.makeApiClient(AppsV1Api).readNamespacedDaemonSet(AGENT_DS);
    assert.equal(ds.metadata?.labels?.['app.kubernetes.io/managed-by'], 'Helm');
    assert.equal(ds.metadata?.annotations?.['meta.helm.sh/release-name'], RELEASE);
  });

  it("serves a ContainerRestart end to end (the first node's agent of the chart restarts the container)", async () => {
    ns = await createNamespace(kc, 'khelm');
    await createWebPod(core, ns, ['app']);
    const running = (p: V1Pod) => p.status?.containerStatuses?.find((s) => s.name === 'app' && s.ready);
    const before = await until('pod web Ready', 60_000, async () => running(await core.readNamespacedPod({ name: 'web', namespace: ns as string })));
    const api = new ContainerRestartApi(kc);
    await api.create(containerRestart(ns, 'bounce', { podName: 'web', containers: [{ name: 'app' }], strategy: { gracePeriodSeconds: 5, minReadySeconds: 1 } }));
    const done = await waitForStatus(api, ns, 'bounce', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed', 90_000);
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    assert.equal(done.status?.agentId, ids.get(env.nodeName), "taken by the first node's agent");
    const after = await until('pod web Ready again', 60_000, async () => running(await core.readNamespacedPod({ name: 'web', namespace: ns as string })));
    assert.notEqual(after.containerID, before.containerID, 'a new container');
    assert.equal(after.restartCount, before.restartCount + 1);
    crUid = done.metadata?.uid ?? '';
    operationId = done.status?.operationId ?? '';
    assert.ok(crUid && operationId);
  });

  it('helm upgrade of one value (logLevel=debug) rolls the DaemonSet on every node; the ContainerRestart stays', async () => {
    const old = await agentsReady();
    await helm(['upgrade', RELEASE, CHART, '-n', RELEASE_NS, '--reuse-values', '--set', 'logLevel=debug', ...sandboxValues(image)]);
    const pods = await agentsReady();
    for (const [node, pod] of pods) {
      assert.notEqual(pod.metadata?.uid, old.get(node)?.metadata?.uid, `${node}: a new pod`);
      assert.ok(pod.spec?.containers.find((c) => c.name === 'agent')?.args?.includes('--log-level=debug'), `${node}: --log-level=debug`);
    }
    const status = JSON.parse(await helm(['status', RELEASE, '-n', RELEASE_NS, '-o', 'json'])) as { version: number; info: { status: string } };
    assert.deepEqual([status.version, status.info.status], [2, 'deployed']);
    const cr = await new ContainerRestartApi(kc).get(ns as string, 'bounce');
    assert.equal(cr.metadata?.uid, crUid, 'the same ContainerRestart object');
    assert.equal(cr.status?.phase, 'Succeeded');
  });

  it('helm uninstall: nothing of the chart left in the cluster (the CRDs and their objects go too); on the nodes, the hostPath directories', async () => {
    const manifest = path.join(tmp, 'manifest.yaml');
    writeFileSync(manifest, await helm(['get', 'manifest', RELEASE, '-n', RELEASE_NS]));
    assert.ok((await existing(manifest)).names.includes('CustomResourceDefinition/containerrestarts.inplace-agent.io'));
    await helm(['uninstall', RELEASE, '-n', RELEASE_NS, '--wait', '--timeout', '3m']);
    assert.deepEqual((await existing(manifest)).names, [], 'every object of the release is gone');
    assert.equal((await kubectl(['api-resources', '--api-group=inplace-agent.io', '-o', 'name'])).trim(), '', 'no inplace-agent.io resource is served');
    assert.equal((await kubectl(['get', 'secrets', '-n', RELEASE_NS, '-l', `owner=helm,name=${RELEASE}`, '-o', 'name'])).trim(), '', "helm's release records are gone");
    for (const { name } of env.nodes) {
      const state = path.join(AGENT_DIRS, 'state', name);
      assert.deepEqual(readdirSync(state).sort(), ['agent-id', 'operations'], `${name}: the state directory`);
      assert.equal(readFileSync(path.join(state, 'agent-id'), 'utf8').trim(), ids.get(name), `${name}: its identity`);
      assert.deepEqual(readdirSync(path.join(AGENT_DIRS, 'run', name)), [], `${name}: the run directory, its socket removed at exit`);
    }
    const op = JSON.parse(readFileSync(path.join(AGENT_DIRS, 'state', env.nodeName, 'operations', `${operationId}.json`), 'utf8')) as { id?: string };
    assert.equal(op.id, operationId, "the ContainerRestart's operation is still in the first node's journal");
  });

  it('the kustomize install put back as scripts/kube-deploy-agent leaves it (kubectl diff of its overlay is empty)', async () => {
    await restore();
    const diff = await run(path.join(env.binDir, 'kubectl'), ['--kubeconfig', env.kubeconfig, 'diff', '-k', OVERLAY]);
    assert.equal(diff.code, 0, `kubectl diff -k ${OVERLAY}:\n${diff.stdout}${diff.stderr}`);
    await agentsReady();
    const ds = await kc.makeApiClient(AppsV1Api).readNamespacedDaemonSet(AGENT_DS);
    assert.equal(ds.metadata?.labels?.['app.kubernetes.io/managed-by'], undefined, 'not managed by helm');
  });
});
