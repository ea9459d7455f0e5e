// Following a kind the agent may not read, on the real API server: an agent installed from deploy/ without
// deploy/optional/fleet-prewarm-rbac.yaml gets 403 on ImagePrewarms. It must say so once and stay quiet,
// never take a failed list for an empty one, and retry at the long interval, not every second.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { systemClock } from '../../src/clock.js';
import { FleetAgent, FLEET_DEFAULTS } from '../../src/controllers/image-prewarm/fleet-agent.js';
import { KubeFleetApi } from '../../src/controllers/image-prewarm/fleet-api.js';
import type { FleetPuller } from '../../src/controllers/image-prewarm/fleet-puller.js';
import { followerDeps, followList, type FollowFailure } from '../../src/k8s/list-follower.js';
import { applyCrds, ensureNamespace, testKubeConfig } from '../support/kube-apply.js';
import { memoryLogger } from '../support/memory-logger.js';
import { requireRuntime } from '../support/require-runtime.js';

const NS = `inplace-denied-${randomBytes(3).toString('hex')}`;
const SA = 'no-fleet-rights';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The follows' short back-off here: a failure taken as passing is retried within this (100, then 200 ms). */
const SHORT = { initialBackoffMs: 100, maxBackoffMs: 200 };
/**
 * How long "nothing more" is watched for once the follower has decided: five times its longest short
 * back-off, so a follower that took a 403/404 for a passing failure would have retried several times.
 */
const QUIET_MS = 5 * SHORT.maxBackoffMs;
/** The fleet's follow keeps the client's default short back-off (first step 1 s): twice that. */
const FLEET_QUIET_MS = 2 * 1000;

/** Polls cond every 50 ms until it holds: the sign that the code under test decided. Fails after ms naming what. */
async function decided(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
  for (const until = Date.now() + ms; !cond(); await sleep(50)) if (Date.now() > until) assert.fail(`${what}: not within ${ms} ms`);
}

/** A kubeconfig that authenticates as a ServiceAccount with no role bound (a token from the TokenRequest API). */
async function serviceAccountConfig(admin: k8s.KubeConfig): Promise<k8s.KubeConfig> {
  const core = admin.makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: SA } } });
  const tr = await core.createNamespacedServiceAccountToken({ name: SA, namespace: NS, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
  const cluster = admin.getCurrentCluster()!;
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: 'test' }],
    users: [{ name: SA, token: tr.status!.token }],
    contexts: [{ name: 'sa', cluster: 'test', user: SA }],
    currentContext: 'sa',
  });
  return kc;
}

describe('following a kind the agent may not read (real API server)', function () {
  this.timeout(60_000);
  let admin: k8s.KubeConfig;
  let sa: k8s.KubeConfig;

  before(async function () {
    await requireRuntime(this, 'the test cluster (scripts/kube-sandbox up)', async () => {
      const kc = testKubeConfig();
      if (!kc) throw new Error('no admin kubeconfig');
      await kc.makeApiClient(k8s.CoreV1Api).listNamespace({ limit: 1 });
      admin = kc;
    });
    await applyCrds(admin, ['imageprewarm.yaml', 'nodeprewarm.yaml']);
    await ensureNamespace(admin, NS);
    sa = await serviceAccountConfig(admin);
  });

  after(async () => {
    await admin?.makeApiClient(k8s.CoreV1Api).deleteNamespace({ name: NS }).catch(() => undefined);
  });

  function follow(kc: k8s.KubeConfig, plural: string) {
    const lists: unknown[][] = [];
    const failures: FollowFailure[] = [];
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const follower = followList(
      followerDeps(kc, systemClock),
      {
        path: `/apis/inplace-agent.io/v1alpha1/${plural}`,
        list: () => custom.listClusterCustomObject({ group: 'inplace-agent.io', version: 'v1alpha1', plural }) as Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>,
        ...SHORT,
        deniedRetryMs: 60_000,
      },
      (items) => lists.push(items),
      (f) => failures.push(f),
    );
    return { lists, failures, follower };
  }

  it('403 (no RBAC for the kind): no made-up empty list, one failure with the long retry, nothing more', async () => {
    const f = follow(sa, 'imageprewarms');
    await decided('the 403 reported', () => f.failures.length > 0);
    await sleep(QUIET_MS); // after the decision: the window in which a short retry would show (see QUIET_MS)
    await f.follower.stop();
    assert.deepEqual(f.lists, [], 'a failed list is never handed on as an empty one');
    assert.deepEqual(
      f.failures.map((x) => [x.status, x.denied, x.retryInMs]),
      [[403, true, 60_000]],
    );
  });

  it('404 (a kind the server does not serve, as without its CRD): the same long retry', async () => {
    const f = follow(admin, 'notinstalledkinds');
    await decided('the 404 reported', () => f.failures.length > 0);
    await sleep(QUIET_MS); // after the decision: the window in which a short retry would show (see QUIET_MS)
    await f.follower.stop();
    assert.deepEqual(f.lists, []);
    assert.deepEqual(
      f.failures.map((x) => [x.status, x.denied, x.retryInMs]),
      [[404, true, 60_000]],
    );
  });

  it('a permitted list comes through once it is in, with no failure', async () => {
    const f = follow(admin, 'imageprewarms');
    await decided('the list handed on', () => f.lists.length > 0);
    await f.follower.stop();
    assert.ok(Array.isArray(f.lists[0]));
    assert.deepEqual(f.failures, []);
  });

  it('the fleet agent without its RBAC: one warning that names the RBAC file, then quiet', async () => {
    const { logger, lines } = memoryLogger();
    const agent = new FleetAgent(new KubeFleetApi(sa, systemClock), {} as FleetPuller, { ...FLEET_DEFAULTS, node: 'no-such-node', leaseNamespace: NS }, systemClock, logger);
    agent.start();
    const records = () => lines.map((l) => JSON.parse(l) as { level: string; message: string; retryIn?: string });
    const warnings = () => records().filter((l) => l.level === 'warn' || l.level === 'error');
    await decided('the fleet agent warned', () => warnings().length > 0);
    await sleep(FLEET_QUIET_MS); // after the decision: the window in which a short retry would show (see FLEET_QUIET_MS)
    await agent.stop();
    assert.equal(warnings().length, 1, lines.join(''));
    assert.match(warnings()[0].message, /may not list ImagePrewarms \(403\).*deploy\/optional\/fleet-prewarm-rbac\.yaml/);
    assert.equal(warnings()[0].retryIn, '300 s', 'it decided to look again only at the long interval');
    assert.equal(agent.requests, 2, `one list, one failure: no retry within ${FLEET_QUIET_MS} ms of the decision`);
  });
});
