// The rules of who may ask for what (request-permissions.ts), the agent's check of a recorded requester
// (access-review.ts, requester-check.ts) with a fake authorizer, and the refusal's status.
import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import { REASON_FORBIDDEN, requireAccess, type AccessReviewer } from '../../src/k8s/access-review.js';
import { checkRequester } from '../../src/controllers/container-restart/requester-check.js';
import { refusedStatus } from '../../src/controllers/container-restart/status.js';
import type { ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { containerRestartNeeds, imagePrewarmNeeds, permissionText, rolloutNeeds, type Permission } from '../../src/k8s/request-permissions.js';
import { recordedRequester, type Requester } from '../../src/k8s/requester.js';
import { selfPod } from '../../src/k8s/self-pod.js';
import { checkPrewarmRequester } from '../../src/controllers/image-prewarm/prewarm-access.js';

/** An authorizer that allows exactly the listed `verb resource/name ns` strings, and records every question. */
function fakeReviewer(allowed: string[]): AccessReviewer & { asked: string[] } {
  const asked: string[] = [];
  const key = (p: Permission) => `${p.verb} ${p.resource}/${p.name ?? '*'} ${p.namespace ?? '-'}`;
  return {
    asked,
    review: async (r: Requester, p: Permission) => {
      asked.push(`${r.username}: ${key(p)}`);
      return { allowed: allowed.includes(key(p)) };
    },
  };
}

const alice: Requester = { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a'] } };
const cr = (containers: ContainerRestart['spec']['containers'], requester: Requester | null = alice): ContainerRestart => ({
  metadata: { name: 'r1', namespace: 'shop', uid: 'uid-1' },
  spec: { podName: 'web', containers, ...(requester ? { requester } : {}) },
});

async function refusal(p: Promise<void>): Promise<AgentError> {
  try {
    await p;
  } catch (err) {
    assert.ok(AgentError.is(err, 'PermissionDenied'), `PermissionDenied expected, got ${String(err)}`);
    assert.equal(err.reason, REASON_FORBIDDEN);
    return err;
  }
  assert.fail('the request was allowed');
}

describe('request permissions: what a creator must hold', () => {
  it('ContainerRestart: an image change needs patch on the pod; a restart delete or patch', () => {
    const withImage = containerRestartNeeds(cr([{ name: 'app', image: 'r/x:2' }, { name: 'side' }]));
    assert.deepEqual(withImage.map((n) => n.anyOf.map(permissionText)), [['patch pods/web in namespace shop']]);
    assert.match(withImage[0].why, /image of app/);
    const restart = containerRestartNeeds(cr([{ name: 'app' }]));
    assert.deepEqual(restart.map((n) => n.anyOf.map(permissionText)), [['delete pods/web in namespace shop', 'patch pods/web in namespace shop']]);
  });

  it('ImagePrewarm: get on each named Secret, list pods for a podSelector, nothing otherwise', () => {
    assert.deepEqual(imagePrewarmNeeds({ spec: {} }), []);
    const needs = imagePrewarmNeeds({ spec: { imagePullSecrets: [{ namespace: 'a', name: 's1' }, { namespace: 'b', name: 's2' }], podSelector: { namespace: 'c' } } });
    assert.deepEqual(needs.map((n) => permissionText(n.anyOf[0])), ['get secrets/s1 in namespace a', 'get secrets/s2 in namespace b', 'list pods in namespace c']);
  });

  it('ImagePrewarm with pin: true: the verb pin on itself, beside create (issue 28, finding 8)', () => {
    const needs = imagePrewarmNeeds({ metadata: { name: 'web-v2' }, spec: { pin: true } });
    assert.deepEqual(needs.map((n) => permissionText(n.anyOf[0])), ['pin imageprewarms.inplace-agent.io/web-v2 (cluster-wide)']);
    assert.deepEqual(imagePrewarmNeeds({ metadata: { name: 'web-v2' }, spec: { pin: false } }), []);
  });

  it('InPlaceRollout: patch on the target workload; no rule for a kind that is not one', () => {
    assert.deepEqual(rolloutNeeds('shop', { kind: 'StatefulSet', name: 'db' })?.map((n) => permissionText(n.anyOf[0])), ['patch statefulsets.apps/db in namespace shop']);
    assert.equal(rolloutNeeds('shop', { kind: 'Secret', name: 'x' }), undefined);
  });
});

describe("the agent's check of the recorded requester", () => {
  it('allows a restart with delete alone, and asks as the recorded user', async () => {
    const rv = fakeReviewer(['delete pods/web shop']);
    await checkRequester(cr([{ name: 'app' }]), rv, undefined);
    assert.deepEqual(rv.asked, ['alice: delete pods/web shop']);
  });

  it('refuses an image change to a user with delete only, naming the missing permission', async () => {
    const err = await refusal(checkRequester(cr([{ name: 'app', image: 'r/x:2' }]), fakeReviewer(['delete pods/web shop']), undefined));
    assert.match(err.message, /alice may not patch pods\/web in namespace shop/);
    assert.match(err.message, /nothing was touched/);
  });

  it('refuses a request with no recorded requester, without asking the authorizer', async () => {
    const rv = fakeReviewer(['delete pods/web shop', 'patch pods/web shop']);
    const err = await refusal(checkRequester(cr([{ name: 'app' }], null), rv, undefined));
    assert.match(err.message, /records no requester/);
    assert.deepEqual(rv.asked, []);
  });

  it("refuses a request for the agent's own pod, whoever asks", async () => {
    const err = await refusal(checkRequester(cr([{ name: 'app' }]), fakeReviewer(['delete pods/web shop']), { namespace: 'shop', name: 'web' }));
    assert.match(err.message, /agent's own pod shop\/web/);
  });

  it('ImagePrewarm: refused when one named Secret is unreadable to its creator; nothing asked without Secrets', async () => {
    const pw = (secrets: { namespace: string; name: string }[]) => ({ metadata: { name: 'warm' }, spec: { images: ['r/x:1'], imagePullSecrets: secrets, requester: alice } });
    const rv = fakeReviewer(['get secrets/ok shop']);
    await checkPrewarmRequester(rv, pw([{ namespace: 'shop', name: 'ok' }]));
    const err = await refusal(checkPrewarmRequester(rv, pw([{ namespace: 'shop', name: 'ok' }, { namespace: 'kube-system', name: 'admin-token' }])));
    assert.match(err.message, /ImagePrewarm warm: its creator alice may not get secrets\/admin-token in namespace kube-system/);
    const quiet = fakeReviewer([]);
    await checkPrewarmRequester(quiet, { metadata: { name: 'plain' }, spec: { images: ['r/x:1'] } });
    assert.deepEqual(quiet.asked, []);
  });

  it('requireAccess passes an empty list of needs without a requester', async () => {
    await requireAccess(fakeReviewer([]), undefined, [], 'nothing');
  });
});

describe('recorded requester and own pod', () => {
  it('reads a requester, dropping what is not of its shape', () => {
    assert.deepEqual(recordedRequester({ requester: alice }), alice);
    assert.deepEqual(recordedRequester({ requester: { username: 'bob', uid: '', groups: [], extra: {} } }), { username: 'bob' });
    assert.equal(recordedRequester({ requester: { username: '' } }), undefined);
    assert.equal(recordedRequester({ requester: 'alice' }), undefined);
    assert.equal(recordedRequester({}), undefined);
    assert.deepEqual(recordedRequester({ requester: { username: 'c', groups: ['g', 7], extra: { k: ['v', {}], bad: 'x' } } }), { username: 'c', groups: ['g'], extra: { k: ['v'] } });
  });

  it('own pod: from the downward API, else the ServiceAccount namespace and the hostname, else none', () => {
    assert.deepEqual(selfPod({ POD_NAMESPACE: 'inplace-system', POD_NAME: 'inplace-agent-x' }, () => 'ignored', () => 'host'), { namespace: 'inplace-system', name: 'inplace-agent-x' });
    assert.deepEqual(selfPod({}, () => 'inplace-system', () => 'inplace-agent-y'), { namespace: 'inplace-system', name: 'inplace-agent-y' });
    assert.equal(selfPod({}, () => undefined, () => 'laptop'), undefined);
  });

  it('a refusal for missing rights carries reason Forbidden; others stay Refused', () => {
    const c = cr([{ name: 'app' }]);
    const now = '2026-12-01T12:00:00.000Z';
    assert.equal(refusedStatus(c, 'm', 'n', 'a', now, REASON_FORBIDDEN).conditions?.[0].reason, 'Forbidden');
    assert.equal(refusedStatus(c, 'm', 'n', 'a', now).conditions?.[0].reason, 'Refused');
  });
});
