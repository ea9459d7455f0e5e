// The Helm chart deploy/helm/inplace-agent, generated from deploy/ (the one source of truth): every template is a
// manifest of deploy/ as written, with a few exact lines swapped for values, and values.yaml takes its defaults
// from the same manifests and from deploy/components/runtime-*. Each swap must match exactly as often as expected,
// so a change of deploy/ that a swap no longer fits stops the generator instead of shipping a stale chart.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadAllYaml, loadYaml, type V1Container, type V1DaemonSet, type V1Volume } from '@kubernetes/client-node';

/** One runtime's paths, as values.yaml's `runtimes` table holds them. */
export interface RuntimePaths {
  runtime: string;
  criEndpoint?: string;
  dockerHost?: string;
  socketPath: string;
  socketType: string;
  root: string;
}

const plain = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

/** Replaces `from` (which must occur exactly `times` times) by `to`; throws naming the file otherwise. */
function swap(text: string, file: string, from: string, to: string, times = 1): string {
  const n = text.split(from).length - 1;
  if (n !== times) throw new Error(`${file}: expected ${times} of ${JSON.stringify(from)}, found ${n}: update scripts/helm-chart/chart.ts`);
  return text.split(from).join(to);
}

/** deploy/ file text with each `{{` written as a template string, so Helm prints it. */
function source(deploy: string, file: string): string {
  // Only an opening pair starts a template action: a closing pair alone is text (and CEL writes `{}}` for an empty map in a list).
  return readFileSync(path.join(deploy, file), 'utf8').replace(/\{\{/g, '{{ "{{" }}');
}

const header = (file: string) => `# Generated from deploy/${file} by scripts/helm-chart (npm run gen:helm); do not edit.\n`;
const when = (cond: string, body: string) => `{{- if ${cond} }}\n${body.replace(/\n?$/, '\n')}{{- end }}\n`;

/**
 * A file's YAML documents, each admission policy (and binding) under the value of its Kubernetes versions:
 * mutating ones (1.36+) under admissionPolicies.mutating, validating ones under admissionPolicies.validating,
 * as components/pre-1.36 leaves out every mutating one. Other documents as they are.
 */
function byPolicyKind(text: string): string {
  const docs = text.split(/^---\n/m);
  if (!docs.some((d) => /^kind: (Mutating|Validating)AdmissionPolicy/m.test(d))) return text;
  return docs
    .map((d) => {
      const kind = d.match(/^kind: (Mutating|Validating)AdmissionPolicy/m)?.[1];
      if (!kind) return d;
      return when(kind === 'Mutating' ? '.Values.admissionPolicies.mutating' : '.Values.admissionPolicies.validating', d);
    })
    .join('---\n');
}

function agentOf(ds: V1DaemonSet): V1Container {
  const agent = ds.spec?.template.spec?.containers.find((c) => c.name === 'agent');
  if (!agent) throw new Error('no agent container');
  return agent;
}

/** A runtime's paths from a DaemonSet (the base, or a runtime component's patch laid over the base's values). */
function runtimePaths(ds: V1DaemonSet, base?: RuntimePaths): RuntimePaths {
  const agent = agentOf(ds);
  const env = (n: string) => agent.env?.find((e) => e.name === n);
  const vol = (n: string): V1Volume | undefined => ds.spec?.template.spec?.volumes?.find((v) => v.name === n);
  const runtime = env('INPLACE_AGENT_RUNTIME')?.value ?? base?.runtime ?? '';
  const cri = env('INPLACE_AGENT_CRI_ENDPOINT');
  const out: RuntimePaths = {
    runtime,
    ...(cri && !(cri as { $patch?: string }).$patch ? { criEndpoint: cri.value } : runtime === 'cri' && base?.criEndpoint ? { criEndpoint: base.criEndpoint } : {}),
    ...(env('INPLACE_AGENT_DOCKER_HOST')?.value ? { dockerHost: env('INPLACE_AGENT_DOCKER_HOST')?.value } : {}),
    socketPath: vol('runtime-sock-dir')?.hostPath?.path ?? '',
    socketType: vol('runtime-sock-dir')?.hostPath?.type ?? '',
    root: vol('runtime-root')?.hostPath?.path ?? '',
  };
  for (const [name, p] of [['runtime-sock-dir', out.socketPath], ['runtime-root', out.root]]) {
    const m = agent.volumeMounts?.find((v) => v.name === name && !(v as { $patch?: string }).$patch);
    if (!p || m?.mountPath !== p) throw new Error(`${name}: mounted at ${m?.mountPath} for host path ${p}; the chart mounts each at its host path`);
  }
  return out;
}

/** The runtimes table: containerd from deploy/daemonset.yaml, the others from deploy/components/runtime-NAME. */
export function runtimeTable(deploy: string): Record<string, RuntimePaths> {
  const ds = plain(loadAllYaml(readFileSync(path.join(deploy, 'daemonset.yaml'), 'utf8')).find((o) => (o as { kind?: string }).kind === 'DaemonSet') as V1DaemonSet);
  const containerd = runtimePaths(ds);
  const table: Record<string, RuntimePaths> = { containerd };
  for (const name of ['crio', 'docker', 'k3s']) {
    table[name] = runtimePaths(plain(loadYaml<V1DaemonSet>(readFileSync(path.join(deploy, `components/runtime-${name}/daemonset.yaml`), 'utf8'))), containerd);
  }
  return table;
}

/** YAML for values.yaml of a plain value (JSON is YAML; one line keeps the generated file short). */
const y = (v: unknown) => JSON.stringify(v);

function valuesYaml(deploy: string, version: string): string {
  const ds = plain(loadAllYaml(readFileSync(path.join(deploy, 'daemonset.yaml'), 'utf8')).find((o) => (o as { kind?: string }).kind === 'DaemonSet') as V1DaemonSet);
  const pod = ds.spec?.template.spec;
  const agent = agentOf(ds);
  const [repository, tag] = (agent.image ?? '').split(/:(?=[^:/]+$)/);
  const ns = plain(loadYaml<{ metadata: { labels: Record<string, string> } }>(readFileSync(path.join(deploy, 'namespace.yaml'), 'utf8')));
  const psa = Object.fromEntries(Object.entries(ns.metadata.labels).filter(([k]) => k.startsWith('pod-security.kubernetes.io/')).map(([k, v]) => [k.slice('pod-security.kubernetes.io/'.length), v]));
  const runtimes = runtimeTable(deploy);
  return [
    '# Generated from deploy/ by scripts/helm-chart (npm run gen:helm); do not edit. The defaults are deploy/\'s;',
    '# docs/operations.md explains each part.',
    '',
    '# The agent image. registry.invalid never resolves: set the repository you pushed deploy/Dockerfile\'s image to.',
    '# A digest (sha256:...) wins over the tag.',
    `image: { repository: ${y(repository)}, tag: ${y(tag ?? version)}, digest: "" }`,
    '',
    '# The node\'s container runtime, one of the runtimes below (deploy/components/runtime-*).',
    'runtime: containerd',
    'runtimes:',
    ...Object.entries(runtimes).map(([k, v]) => `  ${k}: ${y(v)}`),
    '',
    '# The namespace inplace-system and its Pod Security labels (pod-security.kubernetes.io/KEY). The agent needs',
    '# privileged (host network, hostPaths). create: false if you make the namespace yourself.',
    `namespace: { create: true, podSecurity: ${y(psa)} }`,
    '',
    '# The admission policies: validating (Kubernetes 1.30+) and mutating (1.36+; false for 1.30-1.35, the',
    '# weaker guarantee of deploy/components/pre-1.36).',
    'admissionPolicies: { validating: true, mutating: true }',
    '',
    '# The fleet pre-warm\'s opt-in RBAC (deploy/optional; it reads Secrets): needed for ImagePrewarm objects and',
    '# for InPlaceRollouts with prewarm: true.',
    'fleetPrewarmRBAC: false',
    '',
    '# /metrics, /healthz, /readyz have no authentication: on the node\'s loopback unless onNodeIP (the pod IP, the',
    '# node\'s address, with scrape annotations; deploy/components/metrics-on-node-ip).',
    'metrics: { onNodeIP: false }',
    '',
    '# The agent\'s --log-level (debug, info, warn, error); empty: the agent\'s default (info).',
    'logLevel: ""',
    '',
    `resources: ${y(agent.resources)}`,
    `tolerations: ${y(pod?.tolerations ?? [])}`,
    `nodeSelector: ${y(pod?.nodeSelector ?? {})}`,
    `priorityClassName: ${y(pod?.priorityClassName ?? '')}`,
    '',
  ].join('\n');
}

function daemonSetTemplate(text: string): string {
  const f = 'daemonset.yaml';
  let t = text;
  t = swap(t, f, '          image: registry.invalid/inplace-agent:0.1.0\n', '          image: {{ include "inplace-agent.image" . | quote }}\n');
  t = swap(t, f, '            - --log-format=json\n', '            - --log-format=json\n            {{- with .Values.logLevel }}\n            - --log-level={{ . }}\n            {{- end }}\n');
  t = swap(t, f, '      priorityClassName: system-node-critical\n', '      {{- with .Values.priorityClassName }}\n      priorityClassName: {{ . }}\n      {{- end }}\n');
  t = swap(t, f, '      tolerations: [{ operator: Exists }]\n', '      {{- with .Values.tolerations }}\n      tolerations: {{- toYaml . | nindent 8 }}\n      {{- end }}\n');
  t = swap(t, f, '      nodeSelector: { kubernetes.io/os: linux }\n', '      {{- with .Values.nodeSelector }}\n      nodeSelector: {{- toYaml . | nindent 8 }}\n      {{- end }}\n');
  t = swap(t, f, '          resources:\n            requests: { cpu: 20m, memory: 160Mi }\n            limits: { memory: 256Mi }\n', '          resources: {{- toYaml .Values.resources | nindent 12 }}\n');
  t = swap(t, f, '            - { name: INPLACE_AGENT_RUNTIME, value: cri }\n            - { name: INPLACE_AGENT_CRI_ENDPOINT, value: unix:///run/containerd/containerd.sock }\n', [
    '            - { name: INPLACE_AGENT_RUNTIME, value: {{ $rt.runtime | quote }} }',
    '            {{- with $rt.criEndpoint }}',
    '            - { name: INPLACE_AGENT_CRI_ENDPOINT, value: {{ . | quote }} }',
    '            {{- end }}',
    '            {{- with $rt.dockerHost }}',
    '            - { name: INPLACE_AGENT_DOCKER_HOST, value: {{ . | quote }} }',
    '            {{- end }}',
    '',
  ].join('\n'));
  t = swap(t, f, '            - { name: METRICS_HOST, value: 127.0.0.1 }\n', [
    '            {{- if .Values.metrics.onNodeIP }}',
    '            - { name: METRICS_HOST, valueFrom: { fieldRef: { fieldPath: status.podIP } } }',
    '            {{- else }}',
    '            - { name: METRICS_HOST, value: 127.0.0.1 }',
    '            {{- end }}',
    '',
  ].join('\n'));
  t = swap(t, f, 'httpGet: { host: 127.0.0.1, path:', 'httpGet: {{ if not .Values.metrics.onNodeIP }}{ host: 127.0.0.1,{{ else }}{{ "{" }}{{ end }} path:', 3);
  t = swap(t, f, '      labels: { app.kubernetes.io/name: inplace-agent }\n    spec:\n', '      labels: { app.kubernetes.io/name: inplace-agent }\n      {{- if .Values.metrics.onNodeIP }}\n      annotations:\n        prometheus.io/scrape: "true"\n        prometheus.io/port: "9464"\n      {{- end }}\n    spec:\n');
  t = swap(t, f, '            - { name: runtime-sock-dir, mountPath: /run/containerd }\n', '            - { name: runtime-sock-dir, mountPath: {{ $rt.socketPath | quote }} }\n');
  t = swap(t, f, '            - { name: runtime-root, mountPath: /var/lib/containerd, readOnly: true }\n', '            - { name: runtime-root, mountPath: {{ $rt.root | quote }}, readOnly: true }\n');
  t = swap(t, f, '          hostPath: { path: /run/containerd, type: Directory }\n', '          hostPath: { path: {{ $rt.socketPath | quote }}, type: {{ $rt.socketType }} }\n');
  t = swap(t, f, '          hostPath: { path: /var/lib/containerd, type: Directory }', '          hostPath: { path: {{ $rt.root | quote }}, type: Directory }');
  const rt = '{{- $rt := required (printf "runtime %q is not one of %s" .Values.runtime (keys .Values.runtimes | sortAlpha | join ", ")) (get .Values.runtimes .Values.runtime) }}\n';
  return rt + t;
}

function namespaceTemplate(text: string): string {
  const t = swap(text, 'namespace.yaml', '    pod-security.kubernetes.io/enforce: privileged\n    pod-security.kubernetes.io/enforce-version: latest\n',
    '    {{- range $k, $v := .Values.namespace.podSecurity }}\n    pod-security.kubernetes.io/{{ $k }}: {{ $v | quote }}\n    {{- end }}\n');
  return when('.Values.namespace.create', t);
}

const helpers = `{{/* The image reference: repository@digest, or repository:tag. */}}
{{- define "inplace-agent.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}
`;

const notes = `inplace-agent {{ .Chart.AppVersion }}: the DaemonSet inplace-system/inplace-agent on {{ .Values.runtime }}.
{{- if hasPrefix "registry.invalid/" .Values.image.repository }}

WARNING: image.repository is {{ .Values.image.repository }}, which never resolves. Build deploy/Dockerfile,
push it, and set image.repository (and image.tag or image.digest): helm upgrade ... --set image.repository=...
{{- end }}

Check: kubectl -n inplace-system rollout status ds/inplace-agent
Operations (upgrade, uninstall, troubleshooting): docs/operations.md
`;

/** Every file of the chart (path under deploy/helm/inplace-agent -> content), from deploy/ under root. */
export function chartFiles(root: string): Map<string, string> {
  const deploy = path.join(root, 'deploy');
  const version = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
  const k = loadYaml<{ resources: string[] }>(readFileSync(path.join(deploy, 'kustomization.yaml'), 'utf8'));
  const files = new Map<string, string>();
  files.set('Chart.yaml', [
    '# Generated by scripts/helm-chart (npm run gen:helm); do not edit.',
    'apiVersion: v2',
    'name: inplace-agent',
    'description: Node agent that restarts or upgrades one container of a pod in place, with image pre-warming',
    'type: application',
    `version: ${version}`,
    `appVersion: ${y(version)}`,
    'kubeVersion: ">=1.30.0-0"',
    '',
  ].join('\n'));
  files.set('values.yaml', valuesYaml(deploy, version));
  files.set('templates/_helpers.tpl', helpers);
  files.set('templates/NOTES.txt', notes);
  for (const file of [...k.resources, 'optional/fleet-prewarm-rbac.yaml']) {
    const text = source(deploy, file);
    let t: string;
    if (file === 'namespace.yaml') t = namespaceTemplate(text);
    else if (file === 'daemonset.yaml') t = daemonSetTemplate(text);
    else if (file === 'optional/fleet-prewarm-rbac.yaml') t = when('.Values.fleetPrewarmRBAC', text);
    else t = byPolicyKind(text);
    files.set(`templates/${file.replace('/', '-')}`, header(file) + t);
  }
  return files;
}
