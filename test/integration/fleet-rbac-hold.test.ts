// The optional fleet RBAC held by reference on the shared test cluster (test/support/fleet-rbac-hold.ts): a run
// that lets go while another still holds it leaves the grants in place (a test that removed them broke a
// bench:rollout run), and grants installed by hand (without the holders' mark) are never removed.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { ensureNamespace, testKubeConfig } from '../support/kube-apply.js';
import { holdFleetRbac, INSTALLED_BY_HOLDERS } from '../support/fleet-rbac-hold.js';
import { requireRuntime } from '../support/require-runtime.js';

const BINDING = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'inplace-agent-fleet-prewarm' } };

describe('the optional fleet RBAC, held by reference', function () {
  this.timeout(60_000);
  let kc: k8s.KubeConfig;
  let objects: k8s.KubernetesObjectApi;

  before(async function () {
    const maybe = testKubeConfig();
    await requireRuntime(this, 'the test cluster (scripts/kube-sandbox)', async () => {
      if (!maybe) throw new Error('no kubeconfig (scripts/kube-sandbox up)');
      await maybe.makeApiClient(k8s.CoreV1Api).listNamespace({ limit: 1 });
    });
    kc = maybe!;
    objects = kc.makeApiClient(k8s.KubernetesObjectApi);
    await ensureNamespace(kc, 'inplace-system');
  });

  const binding = () => objects.read(BINDING).then((o) => o, () => undefined);

  it('one run letting go while another holds it leaves the grants in place', async () => {
    const first = await holdFleetRbac(kc, 'hold-test-a');
    const second = await holdFleetRbac(kc, 'hold-test-b');
    assert.ok(await binding(), 'held: the ClusterRoleBinding is there');
    await first.release();
    assert.ok(await binding(), 'the second run still holds it: the grants stay');
    await second.release();
  });

  it('grants without the holders mark (installed by hand) stay after the last hold', async () => {
    const hold = await holdFleetRbac(kc, 'hold-test-c');
    const cur = await binding();
    assert.ok(cur);
    // As someone who installed it by hand: the mark goes (put back after, if it was there).
    const marked = cur.metadata?.annotations?.[INSTALLED_BY_HOLDERS];
    const annotations = { ...cur.metadata?.annotations };
    delete annotations[INSTALLED_BY_HOLDERS];
    await objects.replace({ ...cur, metadata: { ...cur.metadata, annotations } });
    await hold.release();
    const after = await binding();
    assert.ok(after, 'unmarked grants stay');
    if (marked) {
      // Put the mark back and let the holders' rule remove it again (a live hold of another run keeps it).
      const again = await holdFleetRbac(kc, 'hold-test-d');
      const now = await binding();
      await objects.replace({ ...now!, metadata: { ...now!.metadata, annotations: { ...now!.metadata?.annotations, [INSTALLED_BY_HOLDERS]: marked } } });
      await again.release();
    }
  });
});
