// deploy/kustomization.yaml is the install (`kubectl apply -k deploy/`): every manifest of deploy/ and
// deploy/crds/ must be one of its resources, so that a file added there is installed, not silently left out.
// deploy/optional/ stays opt-in. The real apply of it is scripts/kube-deploy-agent's, which CI runs.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadYaml } from '@kubernetes/client-node';

const deploy = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../deploy');

describe('deploy/kustomization.yaml', () => {
  const k = loadYaml<{ resources?: string[] }>(readFileSync(path.join(deploy, 'kustomization.yaml'), 'utf8'));
  const resources = k.resources ?? [];

  it('lists every manifest of deploy/ and deploy/crds/, and only files that exist', () => {
    const manifests = [
      ...readdirSync(deploy).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml'),
      ...readdirSync(path.join(deploy, 'crds')).filter((f) => f.endsWith('.yaml')).map((f) => `crds/${f}`),
    ].sort();
    assert.deepEqual([...resources].sort(), manifests);
  });

  it('leaves deploy/optional/ out (opt-in RBAC)', () => {
    assert.deepEqual(resources.filter((r) => r.startsWith('optional/')), []);
  });
});
