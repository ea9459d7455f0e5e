import assert from 'node:assert/strict';
import { groupPods, joinedContainer, podIdentity, podIp, sandboxResolver } from '../../src/runtime/docker/pods.js';
import { APP_ID, SANDBOX_ID, noneNetwork, summary } from '../support/docker-json.js';

const id = (c: string): string => c.repeat(64);

describe('Docker pods from the container list', () => {
  it('groups a sandbox and the containers that joined its network namespace', () => {
    const list = [
      summary(APP_ID, 'dk-a', `container:${SANDBOX_ID}`),
      summary(id('c'), 'dk-b', `container:${SANDBOX_ID}`, { State: 'exited' }),
      summary(SANDBOX_ID, 'dk-sb', 'none', { NetworkSettings: { Networks: noneNetwork } }),
    ];
    const { pods, containers } = groupPods(list);
    assert.equal(pods.length, 1);
    assert.equal(pods[0]!.id, SANDBOX_ID);
    assert.equal(pods[0]!.name, 'docker/dk-sb');
    assert.equal(pods[0]!.namespace, 'docker');
    assert.equal(pods[0]!.uid, SANDBOX_ID);
    assert.equal(pods[0]!.ip, '');
    assert.equal(pods[0]!.state, 'ready');
    assert.equal(pods[0]!.attempt, 0);
    assert.deepEqual(
      containers.map((c) => [c.name, c.podId, c.state]),
      [
        ['dk-a', SANDBOX_ID, 'running'],
        ['dk-b', SANDBOX_ID, 'exited'],
      ],
      'the sandbox is not a container of its own pod',
    );
  });

  it('names a pod of Podman\'s own after it; its infra container holds it and is no container of it', () => {
    const infra = id('9');
    const list = [
      summary(APP_ID, 'web-app', `container:${infra}`),
      summary(id('c'), 'web-side', `container:${infra}`),
      summary(infra, '8690259046d5-infra', 'bridge', { NetworkSettings: { Networks: { podnet: { ...noneNetwork.none!, IPAddress: '10.199.79.70' } } } }),
      summary(id('e'), 'lonely-infra', 'none', { NetworkSettings: { Networks: noneNetwork } }),
      summary(id('f'), 'no-infra-member', 'none', { NetworkSettings: { Networks: noneNetwork } }),
    ];
    const members = new Map([
      [infra, { podId: id('8'), podName: 'web', infra: true }],
      [APP_ID, { podId: id('8'), podName: 'web', infra: false }],
      [id('c'), { podId: id('8'), podName: 'web', infra: false }],
      [id('e'), { podId: id('7'), podName: 'empty', infra: true }],
      [id('f'), { podId: id('6'), podName: 'bare', infra: false }],
    ]);
    const { pods, containers } = groupPods(list, members);
    assert.deepEqual(
      pods.map((p) => [p.id, p.name, p.namespace, p.uid, p.ip]),
      [
        [infra, 'podman/web', 'podman', id('8'), '10.199.79.70'],
        [id('e'), 'podman/empty', 'podman', id('7'), ''],
        [id('f'), 'docker/no-infra-member', 'docker', id('f'), ''],
      ],
    );
    assert.deepEqual(
      containers.map((c) => [c.name, c.podId]),
      [
        ['web-app', infra],
        ['web-side', infra],
        ['no-infra-member', id('f')],
      ],
      'infra containers, even one nobody joined yet, are not containers',
    );
  });

  it('makes a container with its own network that nobody joins a pod of one', () => {
    const solo = summary(id('a'), 'web', 'bridge', {
      NetworkSettings: { Networks: { bridge: { ...noneNetwork.none!, IPAddress: '172.17.0.2' } } },
    });
    const { pods, containers } = groupPods([solo]);
    assert.deepEqual(pods.map((p) => [p.id, p.name, p.ip]), [[id('a'), 'docker/web', '172.17.0.2']]);
    assert.deepEqual(containers.map((c) => [c.id, c.podId, c.name]), [[id('a'), id('a'), 'web']]);
  });

  it('names pods from Kubernetes labels and keeps a labelled sandbox out of the containers even when alone', () => {
    const labels = {
      'io.kubernetes.pod.namespace': 'shop',
      'io.kubernetes.pod.name': 'cart-7d9',
      'io.kubernetes.pod.uid': 'f1e2d3',
      'io.kubernetes.docker.type': 'podsandbox',
    };
    const { pods, containers } = groupPods([summary(id('d'), 'k8s_POD_cart-7d9_shop_f1e2d3_0', 'none', { Labels: labels, State: 'exited' })]);
    assert.equal(pods[0]!.name, 'shop/cart-7d9');
    assert.equal(pods[0]!.namespace, 'shop');
    assert.equal(pods[0]!.uid, 'f1e2d3');
    assert.equal(pods[0]!.state, 'notready');
    assert.deepEqual(containers, []);
  });

  it('resolves joins by name, by id prefix and through chains; a vanished sandbox stays the pod id', () => {
    const list = [
      summary(id('1'), 'sb', 'none'),
      summary(id('2'), 'by-name', 'container:sb'),
      summary(id('3'), 'by-prefix', `container:${'1'.repeat(12)}`),
      summary(id('4'), 'chained', `container:${id('2')}`),
      summary(id('5'), 'orphan', `container:${id('9')}`),
    ];
    const sandboxOf = sandboxResolver(list);
    assert.deepEqual(list.map(sandboxOf), [id('1'), id('1'), id('1'), id('1'), id('9')]);
    const { pods, containers } = groupPods(list);
    assert.deepEqual(pods.map((p) => p.id), [id('1')], 'a container another joined is not a pod');
    assert.equal(containers.length, 4);
  });

  it('reads the pieces: joined container, IP, identity', () => {
    assert.equal(joinedContainer(`container:${SANDBOX_ID}`), SANDBOX_ID);
    assert.equal(joinedContainer('container:'), undefined);
    assert.equal(joinedContainer('none'), undefined);
    assert.equal(joinedContainer('default'), undefined);
    assert.equal(joinedContainer(undefined), undefined);
    assert.equal(podIp({ none: { IPAddress: '' } }), '');
    assert.equal(podIp({ zeta: { IPAddress: '10.0.0.9' }, alpha: { IPAddress: '10.0.0.2' } }), '10.0.0.2');
    assert.equal(podIp(null), '');
    assert.deepEqual(podIdentity('x', '/plain', {}), { name: 'docker/plain', namespace: 'docker', uid: 'x' });
    assert.deepEqual(podIdentity('x', '/plain', { 'io.kubernetes.pod.name': 'only-name' }), {
      name: 'docker/plain',
      namespace: 'docker',
      uid: 'x',
    });
  });
});
