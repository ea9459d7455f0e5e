import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import type { RestartRequest } from '../../src/engine/operation.js';
import { planRestart, preStopCommand, remainingGrace, shortestDeadlineMs } from '../../src/engine/restart-plan.js';
import { resolvePod } from '../../src/engine/pod-resolver.js';
import type { Container, Pod } from '../../src/runtime/types.js';

const pod = (over: Partial<Pod> = {}): Pod => ({
  id: 'abcdef0123456789',
  name: 'shop/web',
  namespace: 'shop',
  uid: 'u1',
  attempt: 0,
  state: 'ready',
  ip: '10.0.0.5',
  createdAt: new Date(0),
  labels: {},
  annotations: {},
  ...over,
});

const ctr = (name: string, over: Partial<Container> = {}): Container => ({
  id: `id-${name}`,
  name,
  podId: 'abcdef0123456789',
  attempt: 0,
  image: 'reg.local/app:v1',
  imageId: 'sha256:1',
  state: 'running',
  createdAt: new Date(0),
  labels: {},
  annotations: {},
  mounts: [],
  ...over,
});

const req = (over: Partial<RestartRequest> = {}): RestartRequest => ({
  pod: 'shop/web',
  containers: ['app'],
  images: {},
  graceSeconds: 30,
  minReadyMs: 1000,
  timeoutMs: 60_000,
  ...over,
});

const kind = (k: string) => (e: unknown) => e instanceof AgentError && e.kind === k;

describe('planRestart', () => {
  it('refuses a deadline that cannot hold each min-ready wait plus a grace period, before anything is touched', () => {
    const refused = () => (e: unknown) => e instanceof AgentError && e.kind === 'InvalidArgument' && e.reason === 'DeadlineTooShort' && /cannot hold/.test(e.message);
    assert.throws(() => planRestart(pod(), [ctr('app')], req({ timeoutMs: 1000, minReadyMs: 5000, graceSeconds: 30 }), {}), refused());
    assert.throws(() => planRestart(pod(), [ctr('a'), ctr('b')], req({ containers: ['a', 'b'], timeoutMs: 20_000, minReadyMs: 10_000, graceSeconds: 1 }), {}), /2 containers × min-ready 10\.0s \+ grace 1s \(21\.0s\)/);
    assert.equal(planRestart(pod(), [ctr('app')], req({ timeoutMs: 35_000, minReadyMs: 5000, graceSeconds: 30 }), {}).length, 1, 'exactly enough is enough');
    assert.equal(shortestDeadlineMs({ containers: ['a', 'b', 'c'], minReadyMs: 1000, graceSeconds: 30 }), 33_000);
  });

  it('targets the running container, keeps its image by default, and bumps the attempt past every earlier one', () => {
    const cs = [ctr('app', { attempt: 2 }), ctr('app', { id: 'old', attempt: 4, state: 'exited' }), ctr('side')];
    const [t] = planRestart(pod(), cs, req(), {});
    assert.equal(t.current.id, 'id-app');
    assert.equal(t.newImage, 'reg.local/app:v1');
    assert.equal(t.newAttempt, 5);
  });

  it('applies a new image per container in the order given', () => {
    const ts = planRestart(pod(), [ctr('a'), ctr('b')], req({ containers: ['b', 'a'], images: { a: 'reg.local/app:v2' } }), {});
    assert.deepEqual(ts.map((t) => [t.name, t.newImage]), [['b', 'reg.local/app:v1'], ['a', 'reg.local/app:v2']]);
  });

  it('refuses two running containers of one name as ambiguous, naming both and which the kubelet made', () => {
    const kubelets = ctr('app', { id: '0123456789abcdef', attempt: 0, labels: { 'io.kubernetes.pod.uid': 'u1' } });
    const other = ctr('app', { id: 'fedcba9876543210', attempt: 90 });
    assert.throws(
      () => planRestart(pod(), [kubelets, other, ctr('side')], req(), { allowKubelet: true }),
      (e: unknown) =>
        e instanceof AgentError &&
        e.kind === 'FailedPrecondition' &&
        e.reason === 'ContainerNameAmbiguous' &&
        e.message === 'pod shop/web has 2 running containers named "app" (fedcba987654 attempt 90, not made by the kubelet; 0123456789ab attempt 0, the kubelet\'s); refusing to guess, nothing was touched',
    );
  });

  it('names the containers a pod has when one is unknown', () => {
    assert.throws(() => planRestart(pod(), [ctr('app'), ctr('side')], req({ containers: ['nope'] }), {}), (e: unknown) =>
      kind('NotFound')(e) && /container "nope" not found in pod shop\/web \(it has: app, side\)/.test((e as Error).message));
  });

  it('refuses bad images, duplicate names, images for containers not restarted, stopped containers', () => {
    assert.throws(() => planRestart(pod(), [ctr('app')], req({ images: { app: 'BAD REF' } }), {}), kind('InvalidArgument'));
    assert.throws(() => planRestart(pod(), [ctr('app')], req({ containers: ['app', 'app'] }), {}), kind('InvalidArgument'));
    assert.throws(() => planRestart(pod(), [ctr('app'), ctr('x')], req({ images: { x: 'reg.local/x:1' } }), {}), kind('InvalidArgument'));
    assert.throws(() => planRestart(pod(), [ctr('app', { state: 'exited' })], req(), {}), kind('FailedPrecondition'));
    assert.throws(() => planRestart(pod({ state: 'notready' }), [ctr('app')], req(), {}), kind('FailedPrecondition'));
  });

  it('behind another operation on the pod, accepts a container between instances (checked again at its turn)', () => {
    const between = [ctr('app', { id: 'old', state: 'exited', attempt: 1 }), ctr('app', { id: 'new', state: 'created', attempt: 2 })];
    assert.throws(() => planRestart(pod(), between, req(), {}), kind('FailedPrecondition'), 'an idle pod: refused');
    const [t] = planRestart(pod(), between, req(), { busy: true });
    assert.equal(t.current.id, 'new', 'the newest instance stands in until the replan');
    assert.equal(t.newAttempt, 3);
    assert.throws(() => planRestart(pod(), [], req(), { busy: true }), kind('NotFound'), 'an unknown name is still refused');
  });

  it('refuses kubelet-managed containers unless in Kubernetes mode', () => {
    const c = ctr('app', { labels: { 'io.kubernetes.pod.uid': 'x' } });
    assert.throws(() => planRestart(pod(), [c], req(), {}), (e: unknown) => kind('FailedPrecondition')(e) && /kubelet/.test((e as Error).message));
    assert.equal(planRestart(pod(), [c], req(), { allowKubelet: true }).length, 1);
  });

  it('refuses, on Docker, the container that owns the network namespace others joined', () => {
    const sandbox = ctr('app', { id: 'abcdef0123456789' });
    assert.throws(() => planRestart(pod(), [sandbox, ctr('side')], req(), {}), (e: unknown) =>
      kind('FailedPrecondition')(e) && /network namespace/.test((e as Error).message));
    assert.equal(planRestart(pod(), [sandbox], req(), {}).length, 1, 'a pod of one may be recreated');
  });
});

describe('preStop hooks and grace', () => {
  it('reads a JSON array from an annotation or label', () => {
    assert.deepEqual(preStopCommand({}, { 'inplace-agent.io/pre-stop': '["sh","-c","sleep 1"]' }), ['sh', '-c', 'sleep 1']);
    assert.deepEqual(preStopCommand({ 'inplace-agent.io/pre-stop': '["true"]' }, {}), ['true']);
    assert.equal(preStopCommand({}, {}), undefined);
    assert.throws(() => preStopCommand({}, { 'inplace-agent.io/pre-stop': 'sleep 1' }), kind('InvalidArgument'));
  });
  it('takes hook time out of the grace period with a 2 s floor', () => {
    assert.equal(remainingGrace(30, 10_000), 20);
    assert.equal(remainingGrace(30, 29_500), 2);
  });
});

describe('resolvePod', () => {
  const pods = [pod(), pod({ id: 'abcdef9999', name: 'shop/api' }), pod({ id: '1234567890', name: 'docker/solo' })];
  it('by name, id, and unique prefix of 6+', () => {
    assert.equal(resolvePod(pods, 'shop/web').id, 'abcdef0123456789');
    assert.equal(resolvePod(pods, '1234567890').name, 'docker/solo');
    assert.equal(resolvePod(pods, '123456').name, 'docker/solo');
    assert.equal(resolvePod(pods, 'docker/solo').id, '1234567890');
  });
  it('refuses ambiguous and unknown', () => {
    assert.throws(() => resolvePod(pods, 'abcdef'), kind('InvalidArgument'));
    assert.throws(() => resolvePod(pods, 'shop/none'), (e: unknown) => kind('NotFound')(e) && /"shop\/none"/.test((e as Error).message));
    assert.throws(() => resolvePod(pods, '12345'), kind('NotFound'));
  });
  it('prefers the ready sandbox when a name has several', () => {
    const two = [pod({ id: 'old', state: 'notready', attempt: 1 }), pod({ id: 'new', attempt: 0 })];
    assert.equal(resolvePod(two, 'shop/web').id, 'new');
  });
});
