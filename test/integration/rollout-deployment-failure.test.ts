// A crashing image on a Deployment rolled out in place by the DaemonSet's agents (deploy/ as
// scripts/kube-deploy-agent installs it, the hold among it): `kubectl set image` to an image whose container exits
// with code 3. The first pod's update fails and is rolled back in place by its agent; no other pod is touched; the
// rollout then sets the Deployment's template back to what its pods run and releases the hold, so the Deployment
// shows its old template again, unpaused, with its one ReplicaSet, and `kubectl rollout status` exits 0.
import assert from 'node:assert/strict';
import { KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { DEPLOYMENT_HOLD_ANNOTATION, ROLLED_BACK_ANNOTATION } from '../../src/controllers/rollout/workloads/hold.js';
import { DEPLOYMENT_REASON } from '../../src/controllers/rollout/workloads/deployment-view.js';
import { historyName } from '../../src/controllers/rollout/workloads/history.js';
import { POD_TEMPLATE_ANNOTATION, REASON } from '../../src/controllers/rollout/plan-types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { deleteNamespace } from '../support/kube-cluster.js';
import { until } from '../support/kube-users.js';
import { gatedTemplate, rolloutCluster, watchRolloutStatus, type RolloutCluster } from '../support/rollout-cluster.js';

const env = kubeEnv();
const NAME = 'crashy';
const REPLICAS = 2;

describe("A Deployment's crashing image, rolled out in place by the DaemonSet's agents (real cluster)", function () {
  this.timeout(600_000);
  const kc = new KubeConfig();
  let c: RolloutCluster;
  const cid = (p: V1Pod) => p.status?.containerStatuses?.find((s) => s.name === 'app')?.containerID ?? '';

  before(async function () {
    c = await rolloutCluster(this, kc, 'iprf');
    await c.createDeployment(NAME, REPLICAS, gatedTemplate(NAME));
    // minReadySeconds (the rollout's: each ContainerRestart's) > 0, so that a container that starts and then exits
    // fails its update; with 0 the update is done as the container starts, and the crash comes after it.
    await c.createRollout(NAME, 'Deployment', NAME, { strategy: { gracePeriodSeconds: 5, minReadySeconds: 5 } });
    await c.kubectl('rollout', 'status', `deployment/${NAME}`, '--timeout=180s');
  });

  after(async () => {
    if (c?.ns) await deleteNamespace(kc, c.ns);
  });

  it('stops at the first pod, rolled back in place; the rollout sets the template back to what the pods run and releases it', async () => {
    const before = new Map((await c.pods(NAME)).map((p) => [p.metadata?.uid ?? '', p]));
    assert.equal(before.size, REPLICAS);
    const rss = await c.replicaSets(NAME);
    assert.equal(rss.length, 1);
    const holding = rss[0].metadata?.name;
    const st = await watchRolloutStatus(kc, c.ns, NAME);
    try {
      await c.kubectl('set', 'image', `deployment/${NAME}`, `app=${env.sandbox.images.crash}`);
      await until('the rollout rolled back', 240_000, async () => (st.seen.some((x) => x.reason === DEPLOYMENT_REASON.rolledBack) ? true : undefined), () => JSON.stringify(st.seen));
    } finally {
      st.stop();
    }
    // The rollout's status names the pod, the container and the reason: first as the pod's failure, then as the rollback.
    const failed = st.seen.find((x) => x.reason === REASON.podFailed);
    assert.match(failed?.message ?? '', new RegExp(`pod ${NAME}-\\S+ container app: .*exit code 3`), JSON.stringify(st.seen));
    const rolledBack = st.seen.find((x) => x.reason === DEPLOYMENT_REASON.rolledBack)?.message ?? '';
    assert.match(rolledBack, new RegExp(`rolled back in place, the template set back to ReplicaSet ${holding}'s: .*pod ${NAME}-\\S+ container app: .*exit code 3`));
    // Only the first pod was touched: one ContainerRestart, and the other pod's container is the one it had.
    const crs = await c.restarts();
    assert.equal(crs.length, 1, 'stopped at the first pod');
    const first = crs[0].spec.podName;
    // And it stays said, with its phase, until the next template change (status.failures is of the template the pods are to run: none now).
    const r = await c.rollout(NAME);
    assert.equal(r.status?.phase, 'Failed');
    assert.equal(r.status?.conditions?.find((x) => x.type === 'Progressing')?.reason, DEPLOYMENT_REASON.rolledBack);
    assert.match(r.status?.message ?? '', new RegExp(`pod ${first} container app: Failed: ReplacementExitedDuringMinReady: .*exit code 3`));
    const after = await c.pods(NAME);
    assert.deepEqual(after.map((p) => p.metadata?.uid).sort(), [...before.keys()].sort(), 'the same pods');
    for (const p of after) {
      assert.equal(p.spec?.containers[0].image, env.sandbox.images.appV1, `${p.metadata?.name} runs the old image`);
      const was = before.get(p.metadata?.uid ?? '') as V1Pod;
      if (p.metadata?.name === first) assert.notEqual(cid(p), cid(was), `${first}: its container replaced (the crash, then the old image back)`);
      else assert.equal(cid(p), cid(was), `${p.metadata?.name}: not touched`);
    }
    // The Deployment shows the old template again, released, its one ReplicaSet the one that holds the pods.
    const d = await until('the Deployment released', 60_000, async () => {
      const x = await c.apps.readNamespacedDeployment({ namespace: c.ns, name: NAME });
      return x.spec?.paused !== true ? x : undefined;
    });
    assert.equal(d.spec?.template.spec?.containers[0].image, env.sandbox.images.appV1, "the Deployment's template is the one its pods run again");
    assert.equal(d.metadata?.annotations?.[DEPLOYMENT_HOLD_ANNOTATION], undefined, 'the hold annotation removed');
    assert.match(d.metadata?.annotations?.[ROLLED_BACK_ANNOTATION] ?? '', /exit code 3/, 'what failed, kept on the Deployment until its next template change');
    assert.deepEqual((await c.replicaSets(NAME)).map((x) => x.metadata?.name).filter((n) => n !== historyName(NAME)), [holding], 'no new ReplicaSet');
    // It took the new template, marked, before the first pod: set back as well.
    const rs = (await c.replicaSets(NAME)).find((x) => x.metadata?.name === holding);
    assert.equal(rs?.spec?.template?.spec?.containers[0].image, env.sandbox.images.appV1, "the ReplicaSet's template is the old one again");
    assert.equal(rs?.spec?.template?.metadata?.annotations?.[POD_TEMPLATE_ANNOTATION], undefined, 'its mark removed');
    // Exit 0, or the call throws.
    assert.match(await c.kubectl('rollout', 'status', `deployment/${NAME}`, '--timeout=60s'), /successfully rolled out/);
    const done = await c.apps.readNamespacedDeployment({ namespace: c.ns, name: NAME });
    assert.equal(done.status?.updatedReplicas, REPLICAS, "the Deployment's own count");
  });
});
