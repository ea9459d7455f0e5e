// A bounded shutdown (issue 39: an agent deleted while the cluster was busy ran on for 6 minutes after SIGTERM,
// its watches answered 401 and its API calls waiting out 60 s deadlines). A real agent on the host, in Kubernetes
// mode with an identity of the run's own (a ServiceAccount with deploy/rbac.yaml's rules), reaches the real API
// server through a loopback relay, and coordinates rollouts (it holds the Lease, which a stop gives back). Its token is revoked (the ServiceAccount deleted, checked by a refused
// SelfSubjectReview), then the API server is made unreachable: blackholed (the relay drops every byte and holds
// the connections) or a closed port (the relay gone). After SIGTERM the agent must exit within its drain timeout
// (src/daemon/shutdown-bound.ts), whatever it was waiting on.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { COORDINATION_LEASE } from '../../src/controllers/rollout/coordinator.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { exitWithin, startAgent, type AgentProcess } from '../support/agent-process.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { kubeTest } from '../support/kube-test.js';
import { failure, tokenConfig, until } from '../support/kube-users.js';
import { ownAgentIdentity, type OwnAgentIdentity } from '../support/own-agent-identity.js';
import { startTcpBlackhole, type TcpBlackhole } from '../support/tcp-blackhole.js';

/** The agent's --drain-timeout here. */
const DRAIN_MS = 3000;
/** Slack past the bound for the signal's delivery and the process's own end on a busy 2-core machine. */
const EXIT_SLACK_MS = 1500;

describe('after SIGTERM the agent exits within its drain timeout, whatever the API server answers (issue 39)', function () {
  this.timeout(120_000);
  const env = kubeEnv();
  let admin: k8s.KubeConfig;
  let ns = '';
  let identity: OwnAgentIdentity | undefined;
  let relay: TcpBlackhole | undefined;
  let agent: AgentProcess | undefined;

  before(async function () {
    ({ kc: admin } = await kubeTest(this));
    ns = await createNamespace(admin, 'shut');
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    await relay?.close();
    relay = undefined;
    await identity?.remove().catch(() => undefined);
    identity = undefined;
  });

  after(async () => {
    if (ns) await deleteNamespace(admin, ns);
  });

  /** Starts an agent whose API server is behind a fresh relay, with a fresh identity; returns its token. */
  async function agentBehindRelay(run: string): Promise<string> {
    identity = await ownAgentIdentity(admin, ns, run, ['rbac.yaml']);
    const server = new URL(admin.getCurrentCluster()?.server ?? '');
    relay = await startTcpBlackhole(server.hostname, Number(server.port || 443));
    const config = JSON.parse(fs.readFileSync(identity.kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[]; users: { user: { token: string } }[] };
    // The API server's certificate names 127.0.0.1.
    config.clusters[0].cluster.server = `https://127.0.0.1:${relay.port}`;
    const file = `${identity.kubeconfig}.relay`;
    fs.writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.sandbox.criEndpoint, '--kubeconfig', file, '--node-name', env.nodeName, '--watch-namespace', ns, '--fleet-namespace', ns, '--drain-timeout', `${DRAIN_MS}ms`]);
    // It coordinates rollouts (the only agent with Leases in ns): on a stop it gives its Lease back, an API call.
    const leases = admin.makeApiClient(k8s.CoordinationV1Api);
    await until('the agent holding the rollout Lease', 60_000, async () => {
      const lease = await leases.readNamespacedLease({ namespace: ns, name: COORDINATION_LEASE }).catch(() => undefined);
      return lease?.spec?.holderIdentity?.startsWith(env.nodeName) ? true : undefined;
    });
    return config.users[0].user.token;
  }

  /** Deletes the identity's ServiceAccount and waits until the API server refuses its token (401). */
  async function revoke(token: string, run: string): Promise<void> {
    await admin.makeApiClient(k8s.CoreV1Api).deleteNamespacedServiceAccount({ namespace: ns, name: `inplace-agent-${run}` });
    const who = tokenConfig(admin, 'revoked', token).makeApiClient(k8s.AuthenticationV1Api);
    await until('the token refused', 30_000, async () => ((await who.createSelfSubjectReview({ body: {} }).then(() => undefined, failure))?.code === 401 ? true : undefined));
  }

  /** SIGTERM, and the time to the agent's exit (it must come within the bound and the slack). */
  async function termAndTime(a: AgentProcess): Promise<{ ms: number; code: number | null }> {
    const t0 = Date.now();
    a.child.kill('SIGTERM');
    const exit = await exitWithin(a, DRAIN_MS + EXIT_SLACK_MS);
    const ms = Date.now() - t0;
    assert.ok(exit, `the agent still runs ${ms} ms after SIGTERM (drain timeout ${DRAIN_MS} ms); its log ends:\n${a.log().slice(-4000)}`);
    return { ms, code: exit.code };
  }

  it('its token revoked and the API server blackholed: it exits within the drain timeout', async () => {
    const run = randomBytes(3).toString('hex');
    const token = await agentBehindRelay(run);
    await revoke(token, run);
    relay?.blackhole();
    const a = agent as AgentProcess;
    const { ms, code } = await termAndTime(a);
    assert.ok(ms <= DRAIN_MS + EXIT_SLACK_MS, `${ms} ms`);
    // Either the clean path ended in time (0) or the bound ended it and said so (1).
    if (code !== 0) assert.match(a.log(), /shutdown did not finish within the drain timeout: exiting now/);
    console.log(`      (exited ${ms} ms after SIGTERM, status ${code})`);
  });

  it('its token revoked and the API server at a closed port: it exits within the drain timeout', async () => {
    const run = randomBytes(3).toString('hex');
    const token = await agentBehindRelay(run);
    await revoke(token, run);
    await relay?.close();
    relay = undefined;
    const a = agent as AgentProcess;
    const { ms, code } = await termAndTime(a);
    assert.ok(ms <= DRAIN_MS + EXIT_SLACK_MS, `${ms} ms`);
    if (code !== 0) assert.match(a.log(), /shutdown did not finish within the drain timeout: exiting now/);
    console.log(`      (exited ${ms} ms after SIGTERM, status ${code})`);
  });
});
