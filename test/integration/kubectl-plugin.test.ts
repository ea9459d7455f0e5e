// The kubectl plugin: `kubectl plugin list` finds kubectl-inplace on PATH, and the real kubectl binary drives it
// against the shared test cluster with kubectl's own --kubeconfig, --context and -n conventions: `restart` of a
// kubelet-managed pod (pinned to the first node) through a ContainerRestart that an agent, authenticated as
// deploy/'s ServiceAccount, runs; `pods`; `prewarm create|status|delete`; and inplacectl finding the same cluster as
// kubectl would (~/.kube/config, --context, -n).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { kubeEnv } from '../testbed/kube-env.js';
import { CTL, runProcess, startAgent, type AgentProcess, type CtlResult } from '../support/agent-process.js';
import { applyCrd, createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { agentKubeconfig, applyObjects, shippedObjects } from '../support/kube-shipped-rbac.js';
import { createWebPod, requireTestCluster } from '../support/kube-web-pod.js';

const env = kubeEnv();
const PLUGIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/kubectl-inplace.js');

describe('kubectl inplace (the kubectl plugin, through the real kubectl)', function () {
  this.timeout(240_000);
  const kc = new KubeConfig();
  const run = randomBytes(3).toString('hex');
  const binDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubectl-plugin-'));
  let core: CoreV1Api;
  let ns: string | undefined;
  let agent: AgentProcess | undefined;

  /** kubectl with the plugin's directory first on PATH; extra environment in envExtra. */
  const kubectl = (args: string[], envExtra: NodeJS.ProcessEnv = {}): Promise<CtlResult> =>
    runProcess(path.join(env.binDir, 'kubectl'), args, { ...process.env, KUBECONFIG: '', ...envExtra, PATH: `${binDir}:${process.env.PATH ?? ''}` });
  const inplace = (...args: string[]) => kubectl(['inplace', '--kubeconfig', env.kubeconfig, ...args]);

  const readWeb = () => core.readNamespacedPod({ name: 'web', namespace: ns as string });
  const running = (p: V1Pod) => ['app', 'sidecar'].every((c) => p.status?.containerStatuses?.find((s) => s.name === c)?.state?.running);
  const untilRunning = async (): Promise<V1Pod> => {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const p = await readWeb();
      if (running(p)) return p;
      if (Date.now() > deadline) throw new Error(`pod web did not run: ${JSON.stringify(p.status?.containerStatuses)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  before(async function () {
    core = await requireTestCluster(this, kc);
    // The plugin as `npm install -g` puts it on PATH: the package's bin entry, a link to the built file.
    fs.symlinkSync(PLUGIN, path.join(binDir, 'kubectl-inplace'));
    await applyCrd(kc);
    await applyObjects(kc, shippedObjects(['crds/imageprewarm.yaml', 'crds/nodeprewarm.yaml', 'namespace.yaml', 'serviceaccount.yaml', 'rbac.yaml']));
    ns = await createNamespace(kc, 'kplugin');
    await createWebPod(core, ns, ['sidecar', 'app']);
    const saKubeconfig = await agentKubeconfig(kc);
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.sandbox.criEndpoint, '--kubeconfig', saKubeconfig, '--node-name', env.nodeName, '--watch-namespace', ns, '--min-ready', '500ms']);
    await untilRunning();
  });

  after(async () => {
    await agent?.stop();
    if (ns) await deleteNamespace(kc, ns);
    fs.rmSync(binDir, { recursive: true, force: true });
  });

  it('kubectl plugin list finds kubectl-inplace on PATH', async () => {
    const res = await kubectl(['plugin', 'list']);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout, new RegExp(`^${path.join(binDir, 'kubectl-inplace').replace(/[.]/g, '\\.')}$`, 'm'));
    assert.doesNotMatch(res.stderr, /kubectl-inplace.*(warning|not executable|overshadow)/i);
  });

  it('pods lists the namespace of -n, containers by name', async () => {
    const res = await inplace('-n', ns as string, 'pods');
    assert.equal(res.code, 0, res.stdout + res.stderr);
    const rows = res.stdout.split('\n').filter((l) => l.startsWith('web '));
    assert.deepEqual(rows.map((l) => l.split(/\s+/)[2]), ['app', 'sidecar'], res.stdout);
    assert.ok(rows.every((l) => l.includes(env.nodeName)), 'the node is shown');
  });

  it('restart NS/POD CONTAINER --image: a ContainerRestart the agent runs, followed to its end (exit 0)', async () => {
    const before = await readWeb();
    const res = await inplace('restart', `${ns}/web`, 'app', '--image', `app=${env.sandbox.images.appV2}`, '--min-ready', '1s', '--grace', '5s');
    assert.equal(res.code, 0, res.stdout + res.stderr + agent?.log().slice(-3000));
    assert.match(res.stdout, /\(containerrestart kplugin-\w+\/web-\w+\)/);
    assert.match(res.stdout, /restarted in place in [0-9.]+s/);
    const after = await untilRunning();
    assert.equal(after.spec?.containers.find((c) => c.name === 'app')?.image, env.sandbox.images.appV2);
    assert.equal(after.metadata?.uid, before.metadata?.uid, 'the same pod');
    const side = (p: V1Pod) => p.status?.containerStatuses?.find((s) => s.name === 'sidecar')?.containerID;
    assert.equal(side(after), side(before), 'the sibling was not touched');
    const listed = await inplace('-n', ns as string, '-o', 'json', 'pods');
    const pods = JSON.parse(listed.stdout) as { name: string; lastRestart?: { phase: string } }[];
    assert.equal(pods.find((p) => p.name === 'web')?.lastRestart?.phase, 'Succeeded');
  });

  it('restart POD with -n and $KUBECONFIG, as kubectl takes them', async () => {
    const res = await kubectl(['inplace', '-n', ns as string, 'restart', 'web', 'sidecar', '--min-ready', '1s', '--grace', '5s'], { KUBECONFIG: env.kubeconfig });
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout, new RegExp(`on pod ${ns}/web`));
  });

  it('--context picks a context of the kubeconfig; an unknown one is bad usage (exit 2)', async () => {
    const ctx = kc.getCurrentContext();
    const ok = await inplace('--context', ctx, '-n', ns as string, 'pods');
    assert.equal(ok.code, 0, ok.stderr);
    const bad = await inplace('--context', `nosuch-${run}`, 'pods');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, new RegExp(`^kubectl inplace: context "nosuch-${run}" is not in the kubeconfig \\(it has: ${ctx}\\)$`, 'm'));
  });

  it('inplacectl finds the cluster as kubectl does: ~/.kube/config, --context, -n; -o yaml', async () => {
    const home = fs.mkdtempSync(path.join(binDir, 'home-'));
    fs.mkdirSync(path.join(home, '.kube'));
    fs.copyFileSync(env.kubeconfig, path.join(home, '.kube', 'config'));
    const ctlEnv: NodeJS.ProcessEnv = { ...process.env, HOME: home };
    delete ctlEnv.KUBECONFIG;
    // --context sends the restart through a ContainerRestart; -n names the namespace of a bare pod name.
    const res = await runProcess(process.execPath, [CTL, '--context', kc.getCurrentContext(), '-n', ns as string, 'restart', 'web', 'app', '--min-ready', '1s', '--grace', '5s'], ctlEnv);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout, new RegExp(`\\(containerrestart ${ns}/web-\\w+\\)`));
    const yaml = await inplace('-n', ns as string, '-o=yaml', 'pods');
    assert.equal(yaml.code, 0, yaml.stderr);
    assert.match(yaml.stdout, /^- namespace: kplugin-\w+\n {2}name: web\n/);
  });

  it('prewarm create, status and delete an ImagePrewarm', async () => {
    const name = `kplugin-${run}`;
    try {
      const created = await inplace('prewarm', 'create', name, '--image', env.sandbox.images.busybox, '--node-selector', `kubernetes.io/hostname=${env.nodeName}`);
      assert.equal(created.code, 0, created.stdout + created.stderr);
      assert.match(created.stdout, new RegExp(`imageprewarm ${name} created`));
      const status = await inplace('-o', 'json', 'prewarm', 'status', name);
      assert.equal(status.code, 0, status.stderr);
      assert.equal((JSON.parse(status.stdout) as { name: string }).name, name);
    } finally {
      const deleted = await inplace('prewarm', 'delete', name);
      assert.equal(deleted.code, 0, deleted.stderr);
    }
  });
});
