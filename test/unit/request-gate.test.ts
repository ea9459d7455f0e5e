// What an agent checks before it takes a ContainerRestart (issue 28): the requester still exists (a ServiceAccount
// by uid), the request has not waited past its unclaimedTTLSeconds, a static pod needs the admin's opt-in, a pod
// no API server knows is refused, and a request waiting for its pod is looked at again when the pod arrives.
import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import { RefusalReasons } from '../../src/engine/reasons.js';
import type { AccessReviewer } from '../../src/k8s/access-review.js';
import { checkRequester, MIRROR_POD_ANNOTATION } from '../../src/controllers/container-restart/requester-check.js';
import { gateUnclaimed } from '../../src/controllers/container-restart/take-gate.js';
import type { ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { UNCLAIMED_TTL_DEFAULT_SECONDS, unclaimedDeadline } from '../../src/controllers/container-restart/unclaimed.js';
import { WaitingRequests } from '../../src/controllers/container-restart/waiting.js';
import { containerRestartNeeds, permissionText, type Permission } from '../../src/k8s/request-permissions.js';
import { requireRequesterAlive, serviceAccountOf, type ServiceAccountReader } from '../../src/controllers/container-restart/requester-alive.js';
import type { Requester } from '../../src/k8s/requester.js';

const SA = 'system:serviceaccount:shop:deployer';
const deployer: Requester = { username: SA, uid: 'sa-uid-1', groups: ['system:serviceaccounts', 'system:serviceaccounts:shop'] };
const CREATED = '2026-12-01T12:00:00Z';
const T0 = Date.parse(CREATED);

function cr(spec: Partial<ContainerRestart['spec']> = {}, requester: Requester = deployer): ContainerRestart {
  return { metadata: { name: 'r1', namespace: 'shop', uid: 'u1', creationTimestamp: CREATED as unknown as Date }, spec: { podName: 'web', containers: [{ name: 'app' }], requester, ...spec } };
}

/** ServiceAccounts by namespace/name and uid, and the lookups made. */
function accounts(existing: Record<string, string>): ServiceAccountReader & { asked: string[] } {
  const asked: string[] = [];
  return { asked, uidOf: async (ns, name) => (asked.push(`${ns}/${name}`), existing[`${ns}/${name}`]) };
}

function allowAll(): AccessReviewer & { asked: string[] } {
  const asked: string[] = [];
  return { asked, review: async (_r: Requester, p: Permission) => (asked.push(permissionText(p)), { allowed: true }) };
}

async function refused(p: Promise<unknown>, reason: string): Promise<AgentError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof AgentError, String(err));
    assert.equal(err.reason, reason, err.message);
    assert.match(err.message, /nothing was touched/);
    return err;
  }
  assert.fail(`not refused (expected ${reason})`);
}

describe('the requester as of now: its ServiceAccount still exists', () => {
  it('reads ServiceAccount users only', () => {
    assert.deepEqual(serviceAccountOf(SA), { namespace: 'shop', name: 'deployer' });
    assert.equal(serviceAccountOf('alice'), undefined);
    assert.equal(serviceAccountOf('system:serviceaccount:shop'), undefined);
    assert.equal(serviceAccountOf('system:serviceaccount:a:b:c'), undefined);
  });

  it('passes the same ServiceAccount; refuses a deleted one and one made again under another uid (RequesterGone)', async () => {
    await requireRequesterAlive(accounts({ 'shop/deployer': 'sa-uid-1' }), deployer, 'r');
    const gone = await refused(requireRequesterAlive(accounts({}), deployer, 'ContainerRestart shop/r1'), RefusalReasons.RequesterGone);
    assert.match(gone.message, /system:serviceaccount:shop:deployer no longer exists/);
    const again = await refused(requireRequesterAlive(accounts({ 'shop/deployer': 'sa-uid-2' }), deployer, 'r'), RefusalReasons.RequesterGone);
    assert.match(again.message, /recorded uid sa-uid-1, now sa-uid-2/);
  });

  it('a user that is not a ServiceAccount is not looked up; a ServiceAccount without a recorded uid only must exist', async () => {
    const a = accounts({ 'shop/deployer': 'any' });
    await requireRequesterAlive(a, { username: 'alice', uid: 'x' }, 'r');
    await requireRequesterAlive(a, { username: SA }, 'r');
    assert.deepEqual(a.asked, ['shop/deployer']);
  });

  it("checkRequester refuses a deleted requester before asking the authorizer about its rights", async () => {
    const rv = allowAll();
    await refused(checkRequester(cr(), rv, undefined, { accounts: accounts({}) }), RefusalReasons.RequesterGone);
    assert.deepEqual(rv.asked, []);
  });
});

describe('static pods: refused unless the request carries the opt-in, which needs restart-static', () => {
  const mirror = { metadata: { annotations: { [MIRROR_POD_ANNOTATION]: 'abc' } } };

  it('a mirror pod without allowStaticPod is refused (StaticPodRefused), whatever the rights', async () => {
    const err = await refused(checkRequester(cr(), allowAll(), undefined, { pod: mirror }), RefusalReasons.StaticPod);
    assert.match(err.message, /is a static pod/);
  });

  it('with allowStaticPod the requester needs restart-static on containerrestarts as well', async () => {
    assert.deepEqual(
      containerRestartNeeds(cr({ allowStaticPod: true })).map((n) => n.anyOf.map(permissionText)),
      [['delete pods/web in namespace shop', 'patch pods/web in namespace shop'], ['restart-static containerrestarts.inplace-agent.io in namespace shop']],
    );
    const rv = allowAll();
    await checkRequester(cr({ allowStaticPod: true }), rv, undefined, { pod: mirror });
    assert.ok(rv.asked.includes('restart-static containerrestarts.inplace-agent.io in namespace shop'), rv.asked.join('; '));
    const denied: AccessReviewer = { review: async (_r, p) => ({ allowed: p.verb !== 'restart-static' }) };
    const err = await refused(checkRequester(cr({ allowStaticPod: true }), denied, undefined, { pod: mirror }), 'Forbidden');
    assert.match(err.message, /may not restart-static containerrestarts/);
  });

  it('an ordinary pod needs no opt-in', async () => {
    await checkRequester(cr(), allowAll(), undefined, { pod: { metadata: { annotations: {} } } });
  });
});

describe('the unclaimed TTL and the gate before the claim', () => {
  const running = { name: 'app', image: 'x', imageID: '', ready: true, restartCount: 0, state: { running: {} } };
  const here = { findPod: async () => ({ api: { metadata: {}, status: { phase: 'Running', containerStatuses: [running] } } }) };

  it('counts from creation: the spec value, else the default of one hour', () => {
    assert.equal(unclaimedDeadline(cr()), T0 + UNCLAIMED_TTL_DEFAULT_SECONDS * 1000);
    assert.equal(unclaimedDeadline(cr({ unclaimedTTLSeconds: 5 })), T0 + 5000);
    assert.equal(unclaimedDeadline({ ...cr(), metadata: { name: 'x' } }), undefined);
  });

  it('past the TTL: refused (UnclaimedRequestExpired), even with its pod here; before it: taken', async () => {
    const gate = await gateUnclaimed(cr({ unclaimedTTLSeconds: 5 }), T0 + 5000, here);
    assert.ok('refuse' in gate && gate.refuse.reason === RefusalReasons.UnclaimedExpired, JSON.stringify(gate));
    assert.match(gate.refuse.message, /not taken within its unclaimedTTLSeconds \(5 s/);
    assert.ok('take' in (await gateUnclaimed(cr({ unclaimedTTLSeconds: 5 }), T0 + 4999, here)));
  });

  it('pod not here: wait until the TTL ends', async () => {
    const gate = await gateUnclaimed(cr({ unclaimedTTLSeconds: 60 }), T0, { findPod: async () => undefined });
    assert.deepEqual(gate, { wait: 'absent', due: T0 + 60_000 });
  });

  it('pod here but its container not started yet: wait for it; started once (or a name the pod lacks): taken', async () => {
    const at = (status: object) => gateUnclaimed(cr(), T0, { findPod: async () => ({ api: { metadata: {}, status } }) });
    assert.equal(((await at({ phase: 'Pending' })) as { wait: string }).wait, 'starting');
    const creating = { ...running, state: { waiting: { reason: 'ContainerCreating' } } };
    assert.equal(((await at({ phase: 'Pending', containerStatuses: [creating] })) as { wait: string }).wait, 'starting');
    assert.ok('take' in (await at({ phase: 'Running', containerStatuses: [{ ...creating, restartCount: 2 }] })), 'crash-looping: started before');
    assert.ok('take' in (await at({ phase: 'Running', containerStatuses: [{ ...running, name: 'other' }] })), 'the engine refuses the name');
  });

  it('a sandbox no API server knows: refused (PodNotInApiServer) unless the agent takes standalone pods', async () => {
    const standalone = { findPod: async () => ({}) };
    const gate = await gateUnclaimed(cr(), T0, standalone);
    assert.ok('refuse' in gate && gate.refuse.reason === RefusalReasons.PodNotInApiServer, JSON.stringify(gate));
    assert.match(gate.refuse.message, /known to no API server/);
    assert.ok('take' in (await gateUnclaimed(cr(), T0, { ...standalone, standalonePods: true })));
  });
});

describe('requests waiting for their pod', () => {
  it('are handed back once when their pod arrives, and forgotten when removed', () => {
    const w = new WaitingRequests();
    w.add('shop/r1', 'shop', 'web');
    w.add('shop/r2', 'shop', 'web');
    w.add('shop/r3', 'shop', 'db');
    w.remove('shop/r2');
    assert.deepEqual(w.take('shop', 'web'), ['shop/r1']);
    assert.deepEqual(w.take('shop', 'web'), []);
    assert.deepEqual(w.take('other', 'db'), []);
    assert.deepEqual(w.take('shop', 'db'), ['shop/r3']);
  });
});
