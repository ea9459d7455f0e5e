import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadKubeConfig } from '../../src/k8s/kubeconfig.js';
import { agentKubeConfigSource, KUBECONFIG_LEFT_ASIDE, kubeModeNeedsNode } from '../../src/k8s/kubeconfig-source.js';

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: { server: "https://10.1.2.3:6443", insecure-skip-tls-verify: true }
users:
- name: u
  user: { token: t0ken }
contexts:
- name: x
  context: { cluster: c, user: u }
current-context: x
`;

describe('kube: finding the kubeconfig', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-test-'));
  const file = path.join(dir, 'config');
  fs.writeFileSync(file, KUBECONFIG);
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads an explicit file, and refuses one that does not exist', () => {
    assert.equal(loadKubeConfig({ kubeconfig: file }, {})?.getCurrentCluster()?.server, 'https://10.1.2.3:6443');
    assert.throws(() => loadKubeConfig({ kubeconfig: path.join(dir, 'nope') }, {}), /--kubeconfig: no such file/);
  });

  it('takes the first existing file of $KUBECONFIG', () => {
    assert.equal(loadKubeConfig({}, { KUBECONFIG: `${path.join(dir, 'missing')}:${file}` })?.getCurrentCluster()?.name, 'c');
  });

  it('is off (undefined) when nothing is found, outside a cluster', () => {
    assert.equal(loadKubeConfig({}, {}), undefined);
    assert.equal(loadKubeConfig({}, { KUBECONFIG: path.join(dir, 'missing') }), undefined);
  });

  it("merges every existing file of $KUBECONFIG as kubectl does: the first to name a thing wins", () => {
    const second = path.join(dir, 'second');
    // Names c, u and x again (the first file's win), and adds cluster d and context y.
    fs.writeFileSync(second, `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: { server: "https://10.9.9.9:6443" }
- name: d
  cluster: { server: "https://10.4.4.4:6443", insecure-skip-tls-verify: true }
users:
- name: u
  user: { token: other }
contexts:
- name: x
  context: { cluster: d, user: u }
- name: y
  context: { cluster: d, user: u, namespace: shop }
current-context: y
`);
    const kc = loadKubeConfig({}, { KUBECONFIG: `${file}:${path.join(dir, 'missing')}:${second}` });
    assert.equal(kc?.getCurrentContext(), 'x');
    assert.equal(kc?.getCurrentCluster()?.server, 'https://10.1.2.3:6443');
    assert.deepEqual(kc?.getContexts().map((c) => c.name), ['x', 'y']);
    // --context picks the later file's context, with its cluster.
    const y = loadKubeConfig({ context: 'y' }, { KUBECONFIG: `${file}:${second}` });
    assert.equal(y?.getCurrentCluster()?.server, 'https://10.4.4.4:6443');
    assert.throws(() => loadKubeConfig({ context: 'z' }, { KUBECONFIG: `${file}:${second}` }), /context "z" is not in the kubeconfig \(it has: x, y\)/);
  });

  it('falls back to ~/.kube/config when $KUBECONFIG is unset, and only then', () => {
    const home = path.join(dir, 'home');
    fs.mkdirSync(path.join(home, '.kube'), { recursive: true });
    fs.writeFileSync(path.join(home, '.kube', 'config'), KUBECONFIG);
    assert.equal(loadKubeConfig({}, { HOME: home })?.getCurrentCluster()?.name, 'c');
    assert.equal(loadKubeConfig({}, { HOME: home, KUBECONFIG: path.join(dir, 'missing') }), undefined);
  });

  it('refuses a file that is not a kubeconfig', () => {
    const bad = path.join(dir, 'bad');
    fs.writeFileSync(bad, 'kind: Config\n');
    assert.throws(() => loadKubeConfig({ kubeconfig: bad }, {}), /names no current cluster|cannot be read/);
  });
});

describe('kube: the agent enters Kubernetes mode only on --kubeconfig or in a cluster', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-kubeconfig-test-'));
  const file = path.join(dir, 'config');
  fs.writeFileSync(file, KUBECONFIG);
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('leaves an exported $KUBECONFIG aside, and takes --kubeconfig', () => {
    assert.equal(agentKubeConfigSource({}, { KUBECONFIG: file }), undefined);
    assert.deepEqual(agentKubeConfigSource({ kubeconfig: file }, { KUBECONFIG: path.join(dir, 'other') }), { kind: 'file', file });
    assert.throws(() => agentKubeConfigSource({ kubeconfig: path.join(dir, 'nope') }, {}), /--kubeconfig: no such file/);
  });

  it('says what turned Kubernetes mode on when the node name is missing', () => {
    assert.equal(kubeModeNeedsNode({ kind: 'file', file }), `Kubernetes mode (--kubeconfig ${file} was given) needs this node's name: give --node-name or set $NODE_NAME`);
    assert.match(kubeModeNeedsNode({ kind: 'in-cluster' }), /^Kubernetes mode \(the agent runs in a cluster \(service account mounted\)\) needs this node's name/);
  });

  it('starts without a node name with $KUBECONFIG exported, saying it left it aside', () => {
    // The agent gets past the Kubernetes-mode check (it used to refuse here) and stops at the runtime, which
    // does not exist: its log says why it is not in Kubernetes mode.
    const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/daemon/main.js');
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, KUBECONFIG: file };
    const r = spawnSync(
      process.execPath,
      [main, '--runtime', 'docker', '--docker-host', `unix://${path.join(dir, 'no-docker.sock')}`, '--listen', `unix://${path.join(dir, 'agent.sock')}`, '--state-dir', path.join(dir, 'state')],
      { encoding: 'utf8', env, timeout: 30_000 },
    );
    assert.notEqual(r.status, 0, r.stderr);
    assert.ok(r.stderr.includes(KUBECONFIG_LEFT_ASIDE), r.stderr);
    assert.doesNotMatch(r.stderr, /needs this node's name/);
  });
});
