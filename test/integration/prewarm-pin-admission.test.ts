// `pin: true` needs a right of its own (issue 28, finding 8): deploy/prewarm-pin-policy.yaml on the real cluster.
// A user with `create` and `update` on imageprewarms, and no more, may pre-pull but not pin: an ImagePrewarm with
// `pin: true`, and a spec change that turns it on, are refused at admission naming the verb. The verb `pin`
// granted, both pass. The objects select no node (a label no node has), so no agent pulls anything.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, type ImagePrewarm } from '../../src/controllers/image-prewarm/types.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { applyCrds } from '../support/kube-apply.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { kubeTest } from '../support/kube-test.js';
import { applyDeployFiles, deleteClusterRules, failure, until, userWithRules, type TestUser } from '../support/kube-users.js';

const POLICY = 'inplace-agent-imageprewarm-pin';

describe('ImagePrewarm pin: true needs the verb pin on imageprewarms (admission)', function () {
  this.timeout(120_000);
  const env = kubeEnv();
  const run = randomBytes(3).toString('hex');
  let admin: k8s.KubeConfig;
  let ns = '';
  let warmer: TestUser;
  let pinner: TestUser;
  const made: string[] = [];

  const body = (name: string, pin: boolean): ImagePrewarm => ({
    apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`,
    kind: 'ImagePrewarm',
    metadata: { name },
    spec: { images: [env.sandbox.images.appV1], nodeSelector: { 'inplace-test/none': run }, pin },
  });
  const ops = { group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL };
  const create = (u: TestUser, pw: ImagePrewarm, dryRun = true) => u.kc.makeApiClient(k8s.CustomObjectsApi).createClusterCustomObject({ ...ops, body: pw, dryRun: dryRun ? 'All' : undefined }).then(() => undefined, failure);

  before(async function () {
    ({ kc: admin } = await kubeTest(this));
    await applyCrds(admin, ['imageprewarm.yaml', 'nodeprewarm.yaml']);
    await applyDeployFiles(admin, ['prewarm-pin-policy.yaml']);
    ns = await createNamespace(admin, 'kpin');
    warmer = await userWithRules(admin, ns, 'warmer', [], [{ apiGroups: [FLEET_GROUP], resources: ['imageprewarms'], verbs: ['create', 'update', 'get'] }]);
    pinner = await userWithRules(admin, ns, 'pinner', [], [{ apiGroups: [FLEET_GROUP], resources: ['imageprewarms'], verbs: ['create', 'update', 'get', 'pin'] }]);
    await until(`${POLICY} in force`, 60_000, async () => ((await create(warmer, body(`probe-${run}`, true)))?.message.includes(POLICY) ? true : undefined));
  });

  after(async () => {
    const custom = admin.makeApiClient(k8s.CustomObjectsApi);
    for (const name of made) await custom.deleteClusterCustomObject({ ...ops, name }).catch(() => undefined);
    if (ns) {
      await deleteClusterRules(admin, ns);
      await deleteNamespace(admin, ns);
    }
  });

  it('create imageprewarms alone: pin: true is refused naming the verb; pin: false passes', async () => {
    const refused = await create(warmer, body(`pin-${run}`, true));
    assert.equal(refused?.code, 403, JSON.stringify(refused));
    assert.match(refused.message, new RegExp(`ValidatingAdmissionPolicy '${POLICY}'.*needs pin on imageprewarms.inplace-agent.io/pin-${run}, which user ${warmer.username} may not do`));
    assert.equal(await create(warmer, body(`nopin-${run}`, false)), undefined);
  });

  it('turning pin on in an existing spec is refused likewise; with the verb pin, both pass', async () => {
    const name = `turn-${run}`;
    assert.equal(await create(warmer, body(name, false), false), undefined);
    made.push(name);
    const custom = warmer.kc.makeApiClient(k8s.CustomObjectsApi);
    const cur = (await custom.getClusterCustomObject({ ...ops, name })) as ImagePrewarm;
    const turned = await custom.replaceClusterCustomObject({ ...ops, name, body: { ...cur, spec: { ...cur.spec, pin: true } }, dryRun: 'All' }).then(() => undefined, failure);
    assert.equal(turned?.code, 403, JSON.stringify(turned));
    assert.match(turned.message, new RegExp(`${POLICY}.*needs pin on imageprewarms.inplace-agent.io/${name}`));

    assert.equal(await create(pinner, body(`pinned-${run}`, true)), undefined);
    const byPinner = pinner.kc.makeApiClient(k8s.CustomObjectsApi);
    const again = (await byPinner.getClusterCustomObject({ ...ops, name })) as ImagePrewarm;
    // The requester policy writes the pinner as requester: that is the spec the pinner now stands for.
    await byPinner.replaceClusterCustomObject({ ...ops, name, body: { ...again, spec: { ...again.spec, pin: true, requester: undefined } }, dryRun: 'All' });
  });
});
