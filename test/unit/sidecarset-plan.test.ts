import assert from 'node:assert/strict';
import { resolveMaxUnavailable } from '../../src/controllers/kit/budget.js';
import { imagesKey, planSidecarSet, restartName, SidecarReasons, type SidecarPodView, type SidecarRestartView } from '../../src/controllers/sidecarset/plan.js';
import { selectorMatches, selectorString } from '../../src/controllers/sidecarset/selector.js';
import { restartObject, restartView } from '../../src/controllers/sidecarset/sidecarset-api.js';
import { injectedAnnotation, type SidecarSet, type SidecarSetSpec } from '../../src/controllers/sidecarset/types.js';
import { differsBeyondImage, quantityValue } from '../../src/controllers/sidecarset/spec-drift.js';
import { prewarmMismatch, prewarmName, prewarmObject, type SidecarPrewarmView } from '../../src/controllers/sidecarset/prewarm.js';

const NOW = Date.parse('2026-12-02T12:00:00Z');
const ANN = injectedAnnotation('mesh');
const set = (spec: Partial<SidecarSetSpec> = {}, image = 'proxy:2'): SidecarSet => ({
  metadata: { name: 'mesh', uid: 's1', generation: 3 },
  spec: { selector: { matchLabels: { mesh: 'on' } }, containers: [{ name: 'proxy', image }], ...spec },
});
const pod = (i: number, over: Partial<SidecarPodView> = {}, proxy = 'proxy:1'): SidecarPodView => ({
  namespace: 'ns',
  name: `web-${i}`,
  uid: `u${i}`,
  labels: { mesh: 'on' },
  namespaceLabels: { team: 'a' },
  annotations: { [ANN]: '1' },
  containers: [
    { name: 'app', image: 'app:1' },
    { name: 'proxy', image: proxy },
  ],
  initContainers: [],
  ready: true,
  deleting: false,
  ...over,
});
const running = (s: SidecarSet, p: SidecarPodView, phase?: string): SidecarRestartView => ({ name: restartName(s, p, imagesKey(s)), namespace: p.namespace, podName: p.name, imagesKey: imagesKey(s), phase });
const plan = (s: SidecarSet, pods: SidecarPodView[], restarts: SidecarRestartView[] = [], prewarms: SidecarPrewarmView[] = []) =>
  planSidecarSet({ set: s, pods, restarts, prewarms: new Map(prewarms.map((v) => [v.name, v])), nowMs: NOW });

describe('SidecarSet planner', () => {
  it('counts matched, injected, conflicting, updated and ready pods from one snapshot', () => {
    const s = set({}, 'proxy:1');
    const pods = [
      pod(0),
      pod(1, { ready: false }),
      pod(2, { annotations: {}, containers: [{ name: 'app', image: 'a' }] }), // matched, created before the SidecarSet: not injected
      pod(3, { annotations: {}, containers: [{ name: 'app', image: 'a' }, { name: 'proxy', image: 'own' }] }), // conflict
      pod(4, { labels: { mesh: 'off' } }),
      pod(5, { deleting: true }),
    ];
    const { actions, status } = plan(s, pods);
    assert.deepEqual(actions, []);
    assert.deepEqual(
      { m: status.matchedPods, i: status.injectedPods, c: status.conflictPods, u: status.updatedPods, r: status.readyPods, g: status.observedGeneration },
      { m: 4, i: 2, c: 1, u: 2, r: 1, g: 3 },
    );
    assert.equal(status.conditions?.[0]?.reason, SidecarReasons.complete);
    assert.equal(status.conditions?.[0]?.status, 'True');
  });

  it('upgrades only the sidecar container, one pod at a time by default, and counts a running one in flight', () => {
    const s = set();
    const pods = [pod(0), pod(1), pod(2)];
    const first = plan(s, pods);
    assert.deepEqual(first.actions.map((a) => [a.pod, a.containers]), [['web-0', [{ name: 'proxy', image: 'proxy:2' }]]]);
    assert.equal(first.status.conditions?.[0]?.reason, SidecarReasons.updating);
    const second = plan(s, pods, [running(s, pods[0]!, 'Running')]);
    assert.deepEqual(second.actions, [], 'the budget of 1 is spent by the pod in flight');
    assert.deepEqual(second.status.podsInFlight, ['ns/web-0']);
    const third = plan(s, [pod(0, {}, 'proxy:2'), pod(1), pod(2)], [running(s, pods[0]!, 'Succeeded')]);
    assert.deepEqual(third.actions.map((a) => a.pod), ['web-1']);
    assert.equal(third.status.updatedPods, 1);
  });

  it('honours maxUnavailable as a number or a percent, counting pods not ready', () => {
    const pods = [0, 1, 2, 3].map((i) => pod(i));
    assert.equal(plan(set({ updateStrategy: { maxUnavailable: 2 } }), pods).actions.length, 2);
    assert.equal(plan(set({ updateStrategy: { maxUnavailable: '50%' } }), pods).actions.length, 2);
    assert.equal(plan(set({ updateStrategy: { maxUnavailable: 2 } }), [...pods.slice(1), pod(0, { ready: false }, 'proxy:2')]).actions.length, 1);
    assert.equal(resolveMaxUnavailable('10%', 4), 1);
    assert.equal(resolveMaxUnavailable(undefined, 10), 1);
    assert.equal(resolveMaxUnavailable('3', 10), 3, 'an integer written as a string is a count, not a percent');
  });

  it('starts nothing while paused, holds the last pods by partition, and upgrades only the updateStrategy.selector subset', () => {
    const pods = [0, 1, 2].map((i) => pod(i));
    const paused = plan(set({ updateStrategy: { paused: true, maxUnavailable: 3 } }), pods);
    assert.deepEqual(paused.actions, []);
    assert.equal(paused.status.conditions?.[0]?.reason, SidecarReasons.paused);
    const part = plan(set({ updateStrategy: { partition: 2, maxUnavailable: 3 } }), pods);
    assert.deepEqual(part.actions.map((a) => a.pod), ['web-0']);
    const done = plan(set({ updateStrategy: { partition: 2, maxUnavailable: 3 } }), [pod(0, {}, 'proxy:2'), pod(1), pod(2)]);
    assert.equal(done.status.conditions?.[0]?.reason, SidecarReasons.partitioned);
    const canary = [pod(0), pod(1, { labels: { mesh: 'on', canary: 'yes' } }), pod(2)];
    const sub = plan(set({ updateStrategy: { selector: { matchLabels: { canary: 'yes' } }, maxUnavailable: 3 } }), canary);
    assert.deepEqual(sub.actions.map((a) => a.pod), ['web-1']);
  });

  it('stops at the first failed pod for these images and names it; a new image starts again', () => {
    const s = set({ updateStrategy: { maxUnavailable: 3 } });
    const pods = [0, 1, 2].map((i) => pod(i));
    const failed = { ...running(s, pods[0]!, 'Failed'), failure: { container: 'proxy', reason: 'CrashLoop', exitCode: 3 } };
    const p = plan(s, pods, [failed]);
    assert.deepEqual(p.actions, []);
    assert.deepEqual(p.status.failures, [{ pod: 'ns/web-0', container: 'proxy', reason: 'CrashLoop', exitCode: 3 }]);
    assert.equal(p.status.conditions?.[0]?.reason, SidecarReasons.failed);
    assert.match(p.status.message ?? '', /pod ns\/web-0 container proxy failed \(CrashLoop\)/);
    assert.equal(plan(set({ updateStrategy: { maxUnavailable: 3 } }, 'proxy:3'), pods, [failed]).actions.length, 3);
  });

  it('upgrades a native sidecar (restartable init container) in place, as a container, under its own image key', () => {
    const s: SidecarSet = { metadata: { name: 'mesh', uid: 's1', generation: 2 }, spec: { selector: {}, initContainers: [{ name: 'agent', image: 'agent:2', restartPolicy: 'Always' }] } };
    const stale = pod(0, { initContainers: [{ name: 'agent', image: 'agent:1' }] });
    const p = plan(s, [stale]);
    assert.deepEqual(p.actions.map((a) => a.containers), [[{ name: 'agent', image: 'agent:2' }]]);
    assert.equal(p.status.conditions?.[0]?.reason, SidecarReasons.updating);
    assert.equal(plan(s, [pod(0, { initContainers: [{ name: 'agent', image: 'agent:2' }] })]).status.conditions?.[0]?.reason, SidecarReasons.complete);
    // A new native image is a new image set: not the name of a ContainerRestart that ended for the older one.
    const s3: SidecarSet = { ...s, spec: { ...s.spec, initContainers: [{ name: 'agent', image: 'agent:3', restartPolicy: 'Always' }] } };
    assert.notEqual(imagesKey(s3), imagesKey(s));
    assert.equal(plan(s3, [stale], [running(s, stale, 'Succeeded')]).actions.length, 1);
  });

  it('matches the namespaceSelector on the namespace labels', () => {
    const s = set({ namespaceSelector: { matchLabels: { team: 'b' } } });
    assert.equal(plan(s, [pod(0)]).status.matchedPods, 0);
    assert.equal(plan(s, [pod(0, { namespaceLabels: { team: 'b' } })]).status.matchedPods, 1);
  });

  it('makes a ContainerRestart of the sidecar alone, undrained unless asked, and reads its failure back', () => {
    const s = set();
    const [a] = plan(s, [pod(0)]).actions;
    const cr = restartObject(s, a!, { username: 'system:serviceaccount:inplace-system:inplace-agent' });
    assert.deepEqual(cr.spec.containers, [{ name: 'proxy', image: 'proxy:2' }]);
    assert.equal(cr.spec.strategy?.drainSeconds, 0);
    assert.equal(cr.spec.strategy?.failurePolicy, 'Rollback');
    assert.equal(restartObject(set({ updateStrategy: { drain: true }, failurePolicy: 'Pause' }), a!, { username: 'u' }).spec.strategy?.failurePolicy, 'Fail');
    const v = restartView({ ...cr, status: { phase: 'Failed', reason: 'RolledBack', containers: [{ name: 'proxy', state: 'RolledBack', reason: 'ContainerExited', exitCode: 3 }] } });
    assert.deepEqual(v.failure, { container: 'proxy', reason: 'ContainerExited', exitCode: 3 });
    assert.equal(v.imagesKey, imagesKey(s));
  });
});

describe('SidecarSet pre-warm (updateStrategy.prewarm)', () => {
  const s = set({ updateStrategy: { prewarm: true, maxUnavailable: 3 } });
  const key = imagesKey(s);
  // Two namespaces with pods to upgrade, and one whose pod runs the new image already.
  const pods = [pod(0), pod(1, { namespace: 'b' }), pod(2, { namespace: 'c' }, 'proxy:2')];
  const view = (ns: string, over: Partial<SidecarPrewarmView> = {}): SidecarPrewarmView => ({ name: prewarmName('s1', key, ns), done: false, failedNodes: [], ...over });

  it('creates one ImagePrewarm per namespace with pods to upgrade, and starts no restart until each is done', () => {
    const first = plan(s, pods);
    assert.deepEqual(first.actions, []);
    assert.deepEqual(first.prewarms.map((a) => [a.namespace, a.images]), [['b', ['proxy:2']], ['ns', ['proxy:2']]]);
    assert.deepEqual(first.keepPrewarms, [prewarmName('s1', key, 'b'), prewarmName('s1', key, 'ns')]);
    assert.equal(first.status.conditions?.[0]?.reason, SidecarReasons.prewarming);
    assert.match(first.status.message ?? '', /pulling proxy:2 on the nodes of the pods to upgrade/);
    const half = plan(s, pods, [], [view('ns', { done: true }), view('b')]);
    assert.deepEqual([half.actions, half.prewarms], [[], []], 'one namespace done is not enough');
    const done = plan(s, pods, [], [view('ns', { done: true }), view('b', { done: true })]);
    assert.deepEqual(done.actions.map((a) => a.pod), ['web-1', 'web-0']);
    assert.equal(done.keepPrewarms.length, 2, 'kept while the first restarts are created');
    assert.equal(done.status.conditions?.[0]?.reason, SidecarReasons.updating);
  });

  it('once a restart of these images exists, needs no pre-warm (the coordinator deletes them), and none when off', () => {
    const after = plan(s, pods, [running(s, pods[0]!, 'Succeeded')]);
    assert.deepEqual([after.prewarms, after.keepPrewarms], [[], []]);
    assert.deepEqual(after.actions.map((a) => a.pod), ['web-1']);
    const off = plan(set({ updateStrategy: { maxUnavailable: 3 } }), pods);
    assert.deepEqual([off.prewarms, off.actions.length], [[], 2]);
    assert.deepEqual(plan(set({ updateStrategy: { prewarm: true, paused: true } }), pods).prewarms, [], 'nothing while paused');
  });

  it('stops before any pod when a node fails to pull, or when the name is taken by an object not its own', () => {
    const failed = plan(s, pods, [], [view('ns', { done: true }), view('b', { failedNodes: [{ node: 'n2', reason: 'ImagePullFailed' }] })]);
    assert.deepEqual([failed.actions, failed.prewarms], [[], []]);
    assert.equal(failed.status.conditions?.[0]?.reason, SidecarReasons.prewarmFailed);
    assert.match(failed.status.message ?? '', /no pod touched: .*-b: node n2: ImagePullFailed/);
    const taken = plan(s, pods, [], [view('b', { foreign: 'ImagePrewarm x exists and has no controller ownerReference' })]);
    assert.equal(taken.status.conditions?.[0]?.reason, SidecarReasons.nameTaken);
    assert.deepEqual(taken.actions, []);
    // A new image set is a new name: the failed pre-warm no longer holds it.
    assert.equal(plan(set({ updateStrategy: { prewarm: true } }, 'proxy:3'), pods, [], [view('b', { failedNodes: [{ node: 'n2', reason: 'x' }] })]).status.conditions?.[0]?.reason, SidecarReasons.prewarming);
  });

  it('makes an ImagePrewarm owned by the SidecarSet for the pods of its matchLabels in one namespace, and tells its own from another', () => {
    const [a] = plan(s, pods).prewarms;
    const pw = prewarmObject(s, a!, 'inplace-agent.io/sidecarset');
    assert.equal(pw.metadata.name, prewarmName('s1', key, 'b'));
    assert.match(pw.metadata.name, /^scs-s1-[0-9a-f]{10}-b$/);
    assert.deepEqual(pw.spec.podSelector, { namespace: 'b', matchLabels: { mesh: 'on' } });
    assert.deepEqual(pw.metadata.ownerReferences, [{ apiVersion: 'inplace-agent.io/v1alpha1', kind: 'SidecarSet', name: 'mesh', uid: 's1', controller: true }]);
    assert.ok((pw.spec.activeDeadlineSeconds ?? 0) > 0, 'a node that cannot pull ends Failed, never waits forever');
    assert.equal(prewarmMismatch(s, pw, 'b'), undefined);
    assert.match(prewarmMismatch(s, { ...pw, metadata: { ...pw.metadata, ownerReferences: [] } } as typeof pw, 'b') ?? '', /no controller ownerReference to SidecarSet mesh/);
    assert.match(prewarmMismatch(s, pw, 'ns') ?? '', /other images or for another namespace/);
  });
});

describe('SidecarSet pods on an older spec (olderSpecPods)', () => {
  // The pod's container as the API server keeps it: the injected spec plus its defaults and the token mount.
  const token = { name: 'kube-api-access-x1', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true };
  const stored = (c: object) => ({ imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', resources: {}, ...c, volumeMounts: [...((c as { volumeMounts?: object[] }).volumeMounts ?? []), token] });
  const want = { name: 'proxy', image: 'proxy:2', env: [{ name: 'MODE', value: 'a' }], ports: [{ containerPort: 15000 }], readinessProbe: { tcpSocket: { port: 15000 } }, resources: { limits: { cpu: '0.1', memory: '64Mi' } } };
  const same = stored({ ...want, image: 'proxy:1', ports: [{ containerPort: 15000, protocol: 'TCP' }], readinessProbe: { tcpSocket: { port: 15000 }, timeoutSeconds: 1, periodSeconds: 10 }, resources: { limits: { cpu: '100m', memory: '64Mi' }, requests: { cpu: '100m', memory: '64Mi' } } });

  it('sees no difference in the image, in what the API server fills in, or in how a quantity is written', () => {
    assert.equal(differsBeyondImage(want, same), false);
    assert.equal(differsBeyondImage({ name: 'proxy', image: 'p' }, stored({ name: 'proxy', image: 'q' })), false);
    assert.equal(quantityValue('100m'), quantityValue('0.1'));
    assert.equal(quantityValue('1Gi'), 2 ** 30);
    assert.equal(quantityValue('x'), undefined);
  });

  it('sees a changed, added or removed env, command, mount or probe', () => {
    assert.equal(differsBeyondImage({ ...want, env: [{ name: 'MODE', value: 'b' }] }, same), true);
    assert.equal(differsBeyondImage({ ...want, env: [...want.env, { name: 'X', value: '1' }] }, same), true);
    assert.equal(differsBeyondImage({ ...want, command: ['proxy', '--fast'] }, same), true);
    assert.equal(differsBeyondImage({ ...want, volumeMounts: [{ name: 'conf', mountPath: '/etc/mesh' }] }, same), true);
    const { readinessProbe: _, ...noProbe } = want;
    assert.equal(differsBeyondImage(noProbe, same), true, 'a probe removed from the SidecarSet');
    assert.equal(differsBeyondImage({ ...want, resources: { limits: { cpu: '200m', memory: '64Mi' } } }, same), true);
  });

  it('counts the injected pods whose sidecar differs beyond its image, or lacks a sidecar added since', () => {
    const s = set({ containers: [want] }, 'proxy:2');
    const p = (i: number, c: object | undefined) => pod(i, { specs: { app: { name: 'app', image: 'app:1' }, ...(c ? { proxy: c } : {}) } }, 'proxy:2');
    const status = plan(s, [p(0, same), p(1, stored({ ...want, env: [] })), p(2, undefined), p(3, same)]).status;
    assert.equal(status.olderSpecPods, 2);
    assert.equal(status.updatedPods, 4, 'their images are current: nothing to restart');
    assert.equal(status.conditions?.[0]?.reason, SidecarReasons.complete);
  });
});

describe('SidecarSet label selectors', () => {
  const sel = { matchLabels: { app: 'web' }, matchExpressions: [
    { key: 'tier', operator: 'In', values: ['a', 'b'] },
    { key: 'env', operator: 'NotIn', values: ['prod'] },
    { key: 'mesh', operator: 'Exists' },
    { key: 'legacy', operator: 'DoesNotExist' },
  ] };
  it('matches as the API server does', () => {
    assert.equal(selectorMatches(sel, { app: 'web', tier: 'a', mesh: '' }), true);
    assert.equal(selectorMatches(sel, { app: 'web', tier: 'c', mesh: '' }), false);
    assert.equal(selectorMatches(sel, { app: 'web', tier: 'a', mesh: '', env: 'prod' }), false);
    assert.equal(selectorMatches(sel, { app: 'web', tier: 'a' }), false);
    assert.equal(selectorMatches(sel, { app: 'web', tier: 'a', mesh: '', legacy: 'x' }), false);
    assert.equal(selectorMatches({}, {}), true);
  });
  it('writes the labelSelector string of a list request', () => {
    assert.equal(selectorString(sel), 'app=web,tier in (a,b),env notin (prod),mesh,!legacy');
    assert.equal(selectorString({}), '');
  });
});
