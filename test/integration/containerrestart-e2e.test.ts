// ContainerRestart objects end to end: a real kube-apiserver, the real agent process (--kubeconfig of deploy/'s
// ServiceAccount) on the
// sandbox's real containerd, and a pod made through the CRI (a standalone pod: the engine recreates its
// containers itself). Also `inplacectl --kubeconfig restart`, which never touches the agent's socket.
import assert from 'node:assert/strict';
import { AuthorizationV1Api, RbacAuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { AgentClient } from '../../src/api/client.js';
import { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import { claimedStatus } from '../../src/controllers/container-restart/status.js';
import { CR_GROUP, CR_PLURAL } from '../../src/controllers/container-restart/types.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { containerRestart, waitForDeletion, waitForStatus } from '../support/container-restarts.js';
import { applyCrd, createNamespace, deleteNamespace, testCluster, type TestCluster } from '../support/kube-cluster.js';
import { AGENT_SA, agentKubeconfig, deleteObjects, ensureObjects, shippedObjects } from '../support/kube-shipped-rbac.js';
import { deleteNodes, ensureNode } from '../support/kube-apply.js';
import { until, userWithRules } from '../support/kube-users.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();

describe('ContainerRestart end to end (real kube-apiserver, agent on the sandbox containerd)', function () {
  this.timeout(180_000);
  let cluster: TestCluster;
  let api: ContainerRestartApi;
  let ns: string;
  let rt: CriRuntime;
  let fixture: CriPodFixture;
  let agent: AgentProcess | undefined;
  const pods: TestPod[] = [];
  const node = 'kcrd-node';

  /** The agent's kubeconfig: deploy/'s ServiceAccount (agentKubeconfig), never admin's. */
  let agentKc = '';
  let installed: KubernetesObject[] = [];
  const agentArgs = () => ['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--kubeconfig', agentKc, '--node-name', node, '--watch-namespace', ns, '--min-ready', '1s', '--no-fleet-prewarm', '--container-restart-standalone-pods'];
  /** Waits (at most 20 s) until the old container is gone: the agent removes it after the report. */
  const removed = async (podId: string, oldId: string) => {
    for (const t0 = Date.now(); (await rt.listContainers({ podId })).some((c) => c.id === oldId); await new Promise((r) => setTimeout(r, 200))) {
      if (Date.now() - t0 > 20_000) assert.fail(`the old container ${oldId} was not removed after the report`);
    }
  };
  /** Waits (at most 30 s) until the agent has logged a record that matches re: its own sign that it decided. */
  const logged = async (a: AgentProcess, re: RegExp) => {
    for (const until = Date.now() + 30_000; !re.test(a.log()); await new Promise((r) => setTimeout(r, 100))) {
      if (Date.now() > until) assert.fail(`the agent did not log ${re} within 30 s:\n${a.log().split('\n').slice(-20).join('\n')}`);
    }
  };

  const running = async (podId: string) => {
    const cs = await rt.listContainers({ podId });
    return Object.fromEntries(cs.filter((c) => c.state === 'running').map((c) => [c.name, c]));
  };

  const pod = async (name: string) => {
    const p = await fixture.create({
      name,
      namespace: ns,
      containers: [
        { name: 'app', image: env.images.appV1 },
        { name: 'side', image: env.images.appV1 },
      ],
    });
    pods.push(p);
    return p;
  };

  before(async function () {
    rt = new CriRuntime(env.criEndpoint);
    await requireRuntime(this, `containerd (CRI) at ${env.criEndpoint}`, () => rt.version());
    cluster = await testCluster(this);
    await applyCrd(cluster.kc);
    api = new ContainerRestartApi(cluster.kc);
    ns = await createNamespace(cluster.kc, 'kcrd-e2e');
    // The agent's identity as deploy/ ships it (already there on the shared cluster, where the DaemonSet runs:
    // left as it is; created here, and deleted after, on a private API server).
    installed = await ensureObjects(cluster.kc, shippedObjects(['namespace.yaml', 'serviceaccount.yaml', 'rbac.yaml']));
    // A Node object under the agent's node name, for its token to be bound to: an agent token that names no node
    // may write no ContainerRestart status (deploy/node-isolation-policy.yaml).
    await ensureNode(cluster.kc, node, {});
    agentKc = await agentKubeconfig(cluster.kc, AGENT_SA, node);
    fixture = new CriPodFixture(env.criEndpoint);
    agent = await startAgent(agentArgs());
  });

  after(async () => {
    await agent?.stop();
    for (const p of pods) await fixture?.remove(p).catch(() => undefined);
    fixture?.close();
    rt?.close();
    if (ns) await deleteNamespace(cluster.kc, ns);
    if (cluster) await deleteObjects(cluster.kc, installed.filter((o) => o.kind !== 'Namespace'));
    if (cluster) await deleteNodes(cluster.kc, [node]);
    await cluster?.close();
  });

  it('runs a ContainerRestart with the engine: new image, status with ids, same journal as RPC, deleted after its TTL', async () => {
    const p = await pod('web');
    const before = await running(p.podId);
    await api.create(containerRestart(ns, 'upgrade', { podName: 'web', containers: [{ name: 'app', image: env.images.appV2 }], strategy: { minReadySeconds: 1, gracePeriodSeconds: 5 }, ttlSecondsAfterFinished: 3 }));
    const done = await waitForStatus(api, ns, 'upgrade', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed');
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    assert.equal(done.status?.nodeName, node);
    assert.equal(done.status?.operationId, done.metadata.uid);
    const st = done.status?.containers?.[0];
    assert.equal(st?.oldContainerID, before.app.id);
    // Reported once verified; the old container is removed after the report (Verified, then Done in the journal).
    assert.ok(st?.state === 'Verified' || st?.state === 'Done', JSON.stringify(st));
    await removed(p.podId, before.app.id);
    const after = await running(p.podId);
    assert.equal(after.app.id, st?.newContainerID, 'the status names the container that now runs');
    assert.equal(after.app.image, env.images.appV2);
    assert.equal(after.side.id, before.side.id, 'the sibling was not touched');
    assert.equal(done.status?.conditions?.find((c) => c.type === 'Succeeded')?.status, 'True');
    // The same engine and journal as an RPC restart: the agent's API knows the operation.
    const c = new AgentClient(`unix://${agent?.socket}`);
    try {
      const op = await c.getOperation(done.status?.operationId ?? '');
      assert.equal(op.state, 'Succeeded');
      assert.equal(op.containers[0].newId, after.app.id);
    } finally {
      c.close();
    }
    await waitForDeletion(api, ns, 'upgrade', 20_000);
  });

  it('refuses an unknown container with a clear status and touches nothing', async () => {
    const p = await pod('refuse');
    const before = await running(p.podId);
    await api.create(containerRestart(ns, 'bad-name', { podName: 'refuse', containers: [{ name: 'app' }, { name: 'nope' }] }));
    const done = await waitForStatus(api, ns, 'bad-name', (cr) => cr.status?.phase === 'Failed');
    const cond = done.status?.conditions?.find((c) => c.type === 'Succeeded');
    assert.equal(cond?.reason, 'ContainerNotFound');
    assert.equal(done.status?.reason, 'ContainerNotFound');
    assert.match(done.status?.message ?? '', /nope/);
    assert.match(done.status?.message ?? '', /app/, 'the message lists the names the pod has');
    const after = await running(p.podId);
    assert.equal(after.app.id, before.app.id);
    assert.equal(after.side.id, before.side.id);
  });

  it('a ContainerRestart for a pod this node does not have is left alone', async () => {
    await api.create(containerRestart(ns, 'elsewhere', { podName: 'not-on-this-node', containers: [{ name: 'app' }] }));
    await logged(agent as AgentProcess, new RegExp(`ContainerRestart left alone: its pod is not on this node .*\\bcr=${ns}/elsewhere\\b`));
    assert.equal((await api.get(ns, 'elsewhere')).status, undefined, 'no status written: not claimed, not refused');
    assert.doesNotMatch((agent as AgentProcess).log(), new RegExp(`ContainerRestart (taken|refused|submitted) .*\\bcr=${ns}/elsewhere\\b`));
  });

  it('without --container-restart-standalone-pods, a request naming a sandbox no API server knows is refused (PodNotInApiServer), nothing touched', async () => {
    const strict = await createNamespace(cluster.kc, 'kcrd-strict');
    const p = await fixture.create({ name: 'foreign', namespace: strict, containers: [{ name: 'app', image: env.images.appV1 }] });
    pods.push(p);
    const before = await running(p.podId);
    const other = await startAgent(agentArgs().map((a) => (a === ns ? strict : a)).filter((a) => a !== '--container-restart-standalone-pods'));
    try {
      await api.create(containerRestart(strict, 'foreign', { podName: 'foreign', containers: [{ name: 'app', image: env.images.appV2 }] }));
      const done = await waitForStatus(api, strict, 'foreign', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed');
      assert.equal(done.status?.phase, 'Failed', JSON.stringify(done.status));
      assert.equal(done.status?.reason, 'PodNotInApiServer');
      assert.match(done.status?.message ?? '', /known to no API server/);
      assert.equal(done.status?.operationId, undefined, 'never taken as an operation');
      const after = await running(p.podId);
      assert.equal(after.app.id, before.app.id, 'the container was not touched');
    } finally {
      await other.stop();
      await deleteNamespace(cluster.kc, strict);
    }
  });

  it('two agents on one node (each with its own journal): the request is taken by one and runs once', async () => {
    const p = await pod('twins');
    const [before] = (await rt.listContainers({ podId: p.podId })).filter((c) => c.name === 'app');
    const second = await startAgent(agentArgs());
    try {
      await api.create(containerRestart(ns, 'twins', { podName: 'twins', containers: [{ name: 'app' }], strategy: { minReadySeconds: 1 } }));
      const done = await waitForStatus(api, ns, 'twins', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed');
      assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
      await removed(p.podId, before.id);
      const apps = (await rt.listContainers({ podId: p.podId })).filter((c) => c.name === 'app');
      assert.deepEqual(apps.map((c) => c.id), [done.status?.containers?.[0].newContainerID], 'one replacement');
      assert.notEqual(apps[0].id, before.id);
      const ran = [];
      for (const a of [agent as AgentProcess, second]) {
        const ops = JSON.parse((await ctl(a.socket, '-o', 'json', 'ops')).stdout) as { id: string }[];
        if (ops.some((o) => o.id === done.metadata.uid)) ran.push(a.stateDir);
      }
      assert.equal(ran.length, 1, 'exactly one agent journaled the operation');
      assert.ok(done.status?.agentId);
    } finally {
      await second.stop();
    }
  });

  it('an agent killed while a ContainerRestart runs finishes it once after its restart, and never runs it again', async () => {
    const p = await pod('crash-safe');
    const before = await running(p.podId);
    await api.create(containerRestart(ns, 'once', { podName: 'crash-safe', containers: [{ name: 'app' }], strategy: { minReadySeconds: 4 } }));
    const runningCr = await waitForStatus(api, ns, 'once', (cr) => cr.status?.containers?.[0]?.state === 'Verifying');
    assert.equal(runningCr.status?.phase, 'Running');
    const stateDir = agent?.stateDir as string;
    agent?.child.kill('SIGKILL');
    await agent?.exited;
    agent = await startAgent(agentArgs(), { stateDir });
    const done = await waitForStatus(api, ns, 'once', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed');
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    const after = await running(p.podId);
    assert.notEqual(after.app.id, before.app.id);
    assert.equal(after.app.id, done.status?.containers?.[0].newContainerID);
    await removed(p.podId, before.app.id);
    const all = (await rt.listContainers({ podId: p.podId })).filter((c) => c.name === 'app');
    assert.equal(all.length, 1, `one app container, the replacement (found ${all.map((c) => `${c.id.slice(0, 12)}:${c.state}`).join(', ')})`);
    // Another restart of the agent: the finished request is not run again.
    await agent.stop();
    agent = await startAgent(agentArgs(), { stateDir });
    // Its sign that it read the object again and decided: finished, nothing to run.
    await logged(agent, new RegExp(`ContainerRestart already finished .*\\bcr=${ns}/once\\b.*\\bphase=Succeeded`));
    assert.equal((await running(p.podId)).app.id, after.app.id, 'the container was not restarted a second time');
    assert.doesNotMatch(agent.log(), new RegExp(`ContainerRestart (taken|submitted) .*\\bcr=${ns}/once\\b`));
    const ops = (await ctl(agent.socket, '-o', 'json', 'ops')).stdout;
    const mine = (JSON.parse(ops) as { id: string }[]).filter((o) => o.id === done.metadata.uid);
    assert.equal(mine.length, 1);
  });

  it('a claim the journal never got (the agent stopped in between) is checked again: a requester whose rights were revoked meanwhile is refused, nothing touched', async () => {
    const p = await pod('revoked');
    const before = await running(p.podId);
    const stateDir = agent?.stateDir as string;
    await agent?.stop();
    agent = undefined;
    // A user who may create the request and patch pods, as admission requires; recorded as its requester.
    const user = await userWithRules(cluster.kc, ns, 'revoked', [
      { apiGroups: [CR_GROUP], resources: [CR_PLURAL], verbs: ['create'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['patch'] },
    ]);
    const requester = { username: user.username, groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'] };
    const created = await new ContainerRestartApi(user.kc).create(containerRestart(ns, 'revoked', { podName: 'revoked', containers: [{ name: 'app', image: env.images.appV2 }], requester }));
    assert.equal(created.spec.requester?.username, user.username);
    // Claimed by this node's agent, as if it had stopped between its claim and its journal record.
    const uid = created.metadata.uid ?? '';
    await api.replaceStatus(created, claimedStatus(created, uid, node, '', new Date().toISOString()));
    // The user's patch right is taken away while the agent is down.
    const rbac = cluster.kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.deleteNamespacedRoleBinding({ name: 'revoked', namespace: ns });
    const authz = cluster.kc.makeApiClient(AuthorizationV1Api);
    await until('the revocation in effect', 30_000, async () => {
      const r = await authz.createSubjectAccessReview({ body: { spec: { user: user.username, groups: requester.groups, resourceAttributes: { verb: 'patch', resource: 'pods', name: 'revoked', namespace: ns } } } });
      return r.status?.allowed ? undefined : true;
    });
    agent = await startAgent(agentArgs(), { stateDir });
    const done = await waitForStatus(api, ns, 'revoked', (cr) => cr.status?.phase === 'Succeeded' || cr.status?.phase === 'Failed');
    assert.equal(done.status?.phase, 'Failed', JSON.stringify(done.status));
    assert.equal(done.status?.conditions?.find((c) => c.type === 'Succeeded')?.reason, 'Forbidden', JSON.stringify(done.status));
    assert.match(done.status?.message ?? '', /may not patch pods\/revoked/);
    assert.equal(done.status?.operationId, undefined, `the claim taken back, no operation: ${JSON.stringify(done.status)}`);
    const after = await running(p.podId);
    assert.equal(after.app.id, before.app.id, 'the container was not touched');
    assert.equal(after.app.image, before.app.image);
  });

  it('inplacectl --kubeconfig restart: follows the object to the end with the RPC path\'s output and exit codes', async () => {
    const p = await pod('ctl');
    const before = await running(p.podId);
    const ok = await ctl('/nonexistent.sock', '--kubeconfig', cluster.kubeconfig, 'restart', `${ns}/ctl`, 'app', '--image', `app=${env.images.appV2}`, '--min-ready', '1s', '--grace', '5s');
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    const after = await running(p.podId);
    assert.match(ok.stdout, /^operation [0-9a-f-]{36} on pod kcrd-e2e-\w+\/ctl \(containerrestart /m);
    assert.match(ok.stdout, new RegExp(`restarted in place in [0-9.]+s \\(submit to verified[^)]*\\): app ${before.app.id.slice(0, 12)} -> ${after.app.id.slice(0, 12)} \\(${env.images.appV2.replace(/[.]/g, '\\.')}, down \\d+ ?ms\\)`));
    assert.equal(after.side.id, before.side.id);

    // A replacement that crashes: Failed, rolled back, exit 1. It exits at once, and an early exit fails the
    // verification as soon as it is seen: the long window only keeps a slow machine from missing it.
    const crash = await ctl('/nonexistent.sock', '--kubeconfig', cluster.kubeconfig, 'restart', `${ns}/ctl`, 'app', '--image', `app=${env.images.crash}`, '--min-ready', '15s', '--grace', '2s');
    assert.equal(crash.code, 1, crash.stdout + crash.stderr);
    assert.match(crash.stdout, /operation [0-9a-f-]{36} Failed( \[\w+\])?: /);
    assert.match(crash.stdout, /app: rolled back/);
    assert.equal((await running(p.podId)).app.image, env.images.appV2, 'the old config runs again');

    // Refused by the agent: exit 1 with its reason; bad usage (caught before anything is sent): exit 2.
    const refused = await ctl('/nonexistent.sock', '--kubeconfig', cluster.kubeconfig, 'restart', `${ns}/ctl`, 'ghost');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /container "?ghost"? .*not found|ghost/);
    const usage = await ctl('/nonexistent.sock', '--kubeconfig', cluster.kubeconfig, 'restart', `${ns}/ctl`, 'app', '--dry-run');
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--dry-run needs the agent socket/);
    const dup = await ctl('/nonexistent.sock', '--kubeconfig', cluster.kubeconfig, 'restart', `${ns}/ctl`, 'app', 'app');
    assert.equal(dup.code, 2);
    assert.match(dup.stderr, /container "app" is named twice/);
  });
});
