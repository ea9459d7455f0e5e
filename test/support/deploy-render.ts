// deploy/ rendered as an operator's overlay would render it: `kubectl kustomize` of a temporary kustomization
// whose resource is deploy/ and whose components are those asked for (deploy/components/NAME, deploy/optional).
// kubectl is the test cluster's (scripts/build-deps kubernetes) when built, else the one on PATH.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAllYaml, type KubernetesObject, type V1Container, type V1DaemonSet, type V1PodSpec } from '@kubernetes/client-node';
import { buildDepsDir } from './build-deps.js';

/** The repository's root. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** The repository's deploy/ directory. */
export const DEPLOY_DIR = path.join(REPO_ROOT, 'deploy');

/** The kubectl binary used to render: the build-deps one (the cluster's version) when built, else PATH's. */
export function kubectlBin(): string {
  const dir = buildDepsDir('kubernetes');
  return dir ? path.join(dir, 'kubectl') : 'kubectl';
}

/** One rendered object. */
export type Rendered = KubernetesObject;

/** The objects as plain data (the library's model classes compare unequal to literals). */
export function plain<T>(objects: T): T {
  return JSON.parse(JSON.stringify(objects)) as T;
}

/** `kubectl kustomize` of deploy/ with these components (paths relative to deploy/); throws with kubectl's stderr. */
export function renderDeploy(components: string[] = [], extra = ''): Rendered[] {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'inplace-render-'));
  try {
    const rel = (p: string) => path.relative(dir, path.join(DEPLOY_DIR, p));
    const lines = ['resources:', `  - ${rel('.')}`];
    if (components.length) lines.push('components:', ...components.map((c) => `  - ${rel(c)}`));
    writeFileSync(path.join(dir, 'kustomization.yaml'), `${lines.join('\n')}\n${extra}`);
    const out = execFileSync(kubectlBin(), ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return plain(loadAllYaml(out) as Rendered[]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The one object of this kind (and name, when given); throws naming what is missing. */
export function find(objects: Rendered[], kind: string, name?: string): Rendered {
  const o = objects.find((x) => x.kind === kind && (name === undefined || x.metadata?.name === name));
  if (!o) throw new Error(`no ${kind}${name ? ` ${name}` : ''} in the rendering`);
  return o;
}

/** The rendered DaemonSet's pod spec and its agent container; throws when either is missing. */
export function agentOf(objects: Rendered[]): { ds: V1DaemonSet; pod: V1PodSpec; agent: V1Container } {
  const ds = find(objects, 'DaemonSet', 'inplace-agent') as V1DaemonSet;
  const pod = ds.spec?.template.spec;
  const agent = pod?.containers.find((c) => c.name === 'agent');
  if (!pod || !agent) throw new Error('the rendered DaemonSet has no agent container');
  return { ds, pod, agent };
}

/** The value of the agent's environment variable `name` ('' when it has none; undefined when it is not set). */
export function envValue(agent: V1Container, name: string): string | undefined {
  const e = agent.env?.find((v) => v.name === name);
  return e ? (e.value ?? (e.valueFrom?.fieldRef ? `fieldRef:${e.valueFrom.fieldRef.fieldPath}` : '')) : undefined;
}
