// A kubeconfig whose token the test cluster's API server refuses (HTTP 401): inplacectl and kubectl-inplace say
// the kubeconfig's credentials were refused, with errorKind Unauthenticated and exit status 3 (docs/reference.md),
// on every Kubernetes-facing path, and create nothing. The agent's own 401 stays Unavailable (unit test).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { CTL, runProcess, type CtlResult } from '../support/agent-process.js';
import { requireTestCluster } from '../support/kube-web-pod.js';

const PLUGIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/kubectl-inplace.js');

/** The exit status and error object of a refused run. */
function refused(res: CtlResult): { error: string; errorKind: string; exitCode: number } {
  assert.equal(res.code, 3, res.stdout + res.stderr);
  const e = JSON.parse(res.stdout) as { error: string; errorKind: string; exitCode: number };
  assert.equal(e.errorKind, 'Unauthenticated', res.stdout);
  assert.equal(e.exitCode, 3);
  assert.match(e.error, /refused the kubeconfig's credentials/, res.stdout);
  assert.match(res.stderr, /refused the kubeconfig's credentials/);
  return e;
}

describe("a kubeconfig whose credentials the API server refuses (inplacectl, kubectl-inplace)", function () {
  this.timeout(60_000);
  const kc = new KubeConfig();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-bogus-'));
  const bogus = path.join(dir, 'kubeconfig');

  before(async function () {
    await requireTestCluster(this, kc);
    // The cluster and its CA as the admin kubeconfig has them; a token no authenticator knows.
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the admin kubeconfig has no current cluster');
    const user = new KubeConfig();
    user.loadFromOptions({
      clusters: [cluster],
      users: [{ name: 'bogus', token: 'not-a-token-the-api-server-knows' }],
      contexts: [{ name: 'bogus', cluster: cluster.name, user: 'bogus', namespace: 'default' }],
      currentContext: 'bogus',
    });
    fs.writeFileSync(bogus, user.exportConfig(), { mode: 0o600 });
  });

  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const ctl = (...args: string[]) => runProcess(process.execPath, [CTL, '--kubeconfig', bogus, '-o', 'json', ...args], { ...process.env, KUBECONFIG: '' });
  const plugin = (...args: string[]) => runProcess(process.execPath, [PLUGIN, '--kubeconfig', bogus, '-o', 'json', ...args], { ...process.env, KUBECONFIG: '' });

  it('inplacectl --kubeconfig restart exits 3 before creating anything', async () => {
    const e = refused(await ctl('restart', 'default/web', 'app'));
    assert.match(e.error, /SelfSubjectReview|ContainerRestart/);
  });

  it('inplacectl prewarm status and rollout status exit 3', async () => {
    refused(await ctl('prewarm', 'status', 'no-such-prewarm'));
    refused(await ctl('rollout', 'status', 'no-such-rollout'));
  });

  it('kubectl-inplace pods and prewarm create exit 3', async () => {
    const pods = refused(await plugin('pods'));
    assert.match(pods.error, /^list pods in namespace default: /);
    refused(await plugin('prewarm', 'create', 'no-such-prewarm', '--image', 'registry.local/x:1'));
  });
});
