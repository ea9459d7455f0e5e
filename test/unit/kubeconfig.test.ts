import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadKubeConfig } from '../../src/kube/kubeconfig.js';

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

  it('refuses a file that is not a kubeconfig', () => {
    const bad = path.join(dir, 'bad');
    fs.writeFileSync(bad, 'kind: Config\n');
    assert.throws(() => loadKubeConfig({ kubeconfig: bad }, {}), /names no current cluster|cannot be read/);
  });
});
