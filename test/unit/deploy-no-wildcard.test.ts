// deploy/ grants no wildcard (issue 39): no rule of a Role or ClusterRole anywhere under deploy/ (the kustomization,
// its components and optional parts, and the generated Helm chart) names "*" as an API group, resource, verb,
// resource name or URL, and the agent's impersonation is of ServiceAccounts only, only to patch pods.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadAllYaml, type V1ClusterRole } from '@kubernetes/client-node';
import { REPO_ROOT } from '../support/deploy-render.js';

const DEPLOY = path.join(REPO_ROOT, 'deploy');
const FIELDS = ['apiGroups', 'resources', 'verbs', 'resourceNames', 'nonResourceURLs'] as const;

/** Every .yaml file under dir, recursively. */
function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? yamlFiles(p) : /\.ya?ml$/.test(e.name) ? [p] : [];
  });
}

/** The rule lines of a file that hold a "*" in one of FIELDS (text, so that Helm templates are read too). */
function wildcardLines(text: string): string[] {
  const field = new RegExp(`^\\s*-?\\s*(${FIELDS.join('|')}):\\s*\\[[^\\]]*(["']\\*["']|\\*)[^\\]]*\\]`);
  const lines = text.split('\n');
  const out: string[] = [];
  lines.forEach((l, i) => {
    if (field.test(l)) out.push(`${i + 1}: ${l.trim()}`);
    // a block list under one of the fields: "- '*'"
    const prev = lines.slice(0, i).reverse().find((p) => !/^\s*-\s/.test(p));
    if (/^\s*-\s*["']?\*["']?\s*$/.test(l) && prev && new RegExp(`^\\s*-?\\s*(${FIELDS.join('|')}):\\s*$`).test(prev)) out.push(`${i + 1}: ${l.trim()}`);
  });
  return out;
}

describe('deploy/ grants no wildcard', () => {
  const files = yamlFiles(DEPLOY);

  it('finds the roles of the kustomization, the optional parts and the Helm chart', () => {
    for (const f of ['rbac.yaml', 'optional/fleet-prewarm-rbac.yaml', 'helm/inplace-agent/templates/rbac.yaml']) assert.ok(files.includes(path.join(DEPLOY, f)), f);
  });

  it('no role rule in any file under deploy/ names "*"', () => {
    const found = files.flatMap((f) => wildcardLines(readFileSync(f, 'utf8')).map((l) => `${path.relative(REPO_ROOT, f)}:${l}`));
    // admission policies match apiVersions ["*"]: that is a match, not a grant, and apiVersions is not a rule field here
    assert.deepEqual(found, []);
  });

  it('the text check sees a wildcard where there is one', () => {
    assert.equal(wildcardLines('rules:\n  - apiGroups: [authentication.k8s.io]\n    resources: ["*"]\n').length, 1);
    assert.equal(wildcardLines("    verbs:\n      - '*'\n").length, 1);
    assert.equal(wildcardLines('        apiVersions: ["*"]\n').length, 0);
  });

  it('the ClusterRoles of deploy/ (parsed) hold no "*", and impersonate only ServiceAccounts, only to patch pods', () => {
    const roles = files
      .filter((f) => !f.includes(`${path.sep}helm${path.sep}`))
      .flatMap((f) => (loadAllYaml(readFileSync(f, 'utf8')) as (V1ClusterRole | null)[]).filter((o): o is V1ClusterRole => o?.kind === 'ClusterRole' || o?.kind === 'Role'));
    assert.ok(roles.length >= 3, `roles found: ${roles.length}`);
    const rules = roles.flatMap((r) => r.rules ?? []);
    for (const rule of rules) for (const f of FIELDS) assert.ok(!(rule[f] ?? []).includes('*'), `${f} of ${JSON.stringify(rule)}`);
    const impersonating = rules.filter((r) => r.verbs.some((v) => v.startsWith('impersonate')));
    assert.deepEqual(
      impersonating.map((r) => ({ apiGroups: r.apiGroups, resources: r.resources, verbs: r.verbs })),
      [
        { apiGroups: ['authentication.k8s.io'], resources: ['serviceaccounts'], verbs: ['impersonate:serviceaccount'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['impersonate-on:serviceaccount:patch'] },
      ],
    );
  });
});
