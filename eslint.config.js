// Lint setup: typescript-eslint's recommended rules over src, test, bench and scripts, and the layering of
// src/ (docs/development.md): imports that would run against the direction of the layers fail the lint.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The rooms of src/ (docs/development.md, "Where each part lives") and the rooms each may import
 * besides its own and the foundation (the files at the top of src/, and src/gen/). This table is the truth.
 */
export const ROOMS = {
  runtime: { may: [], owns: 'the Runtime interface and its domain types; its adapter folders are rooms of their own' },
  'runtime/containerd': { may: ['runtime'], owns: "containerd's own API beside CRI (pins, ingests, leases)" },
  'runtime/cri': { may: ['runtime', 'runtime/containerd'], owns: 'the CRI adapter' },
  'runtime/docker': { may: ['runtime'], owns: 'the Docker Engine adapter' },
  engine: { may: ['runtime'], owns: 'restarts: plan, journal, executor, strategies, and the ports it needs (ImagePuller)' },
  pull: { may: ['runtime', 'engine'], owns: "the pull service; it implements the engine's ImagePuller port" },
  api: { may: ['runtime', 'engine', 'pull'], owns: 'the gRPC API: server, handlers, wire conversion, client' },
  k8s: { may: [], owns: 'the Kubernetes platform: client, kubeconfig, list-and-watch follower, API errors, access reviews, the requester, conditions, the Lease election' },
  kube: { may: ['runtime', 'engine', 'k8s'], owns: "Kubernetes mode, the engine's plug-in: the kubelet strategy, the drain, the readiness condition and gate, Events, preStop, this node's pods" },
  'controllers/container-restart': { may: ['runtime', 'engine', 'k8s', 'kube'], owns: 'the ContainerRestart controller: request, requester checks, status' },
  'controllers/image-prewarm': { may: ['runtime', 'pull', 'k8s'], owns: 'fleet pre-warm: ImagePrewarm and NodePrewarm, pull slots' },
  'controllers/kit': { may: ['k8s'], owns: 'what every controller shares: the elected coordinator loop, the watch cache that reads its own writes, ownership and create-or-NameTaken, names, budgets, status pacing, reasons' },
  'controllers/rollout': { may: ['k8s', 'controllers/kit', 'controllers/container-restart', 'controllers/image-prewarm'], owns: 'InPlaceRollout: the planner, the workload holds, the elected coordinator' },
  'controllers/sidecarset': { may: ['k8s', 'controllers/kit', 'controllers/container-restart', 'controllers/image-prewarm'], owns: 'SidecarSet: its types, status and in-place sidecar upgrades' },
  cli: { may: ['api', 'pull', 'k8s', 'controllers/container-restart', 'controllers/image-prewarm', 'controllers/rollout'], owns: 'inplacectl and the kubectl plugin' },
  daemon: { may: ['runtime', 'runtime/containerd', 'runtime/cri', 'runtime/docker', 'engine', 'pull', 'api', 'k8s', 'kube', 'controllers/container-restart', 'controllers/image-prewarm', 'controllers/rollout', 'controllers/sidecarset'], owns: 'the composition root' },
};

/** What a controller may take from a sibling controller (besides nothing): its types, and pure read models named here. */
export const SIBLING_DOORS = { 'controllers/container-restart': ['types'], 'controllers/image-prewarm': ['types', 'summary'], 'controllers/rollout': ['types'], 'controllers/sidecarset': ['types'] };
/** What cli/ may take from a controller (it shows and writes their objects, it never runs them). */
export const CLI_DOORS = { 'controllers/container-restart': ['types', 'api'], 'controllers/image-prewarm': ['types', 'summary', 'targets', 'fleet-api'], 'controllers/rollout': ['types', 'rollout-api', 'snapshot', 'revisions', 'plan-types', 'template-diff', 'workloads/hold', 'workloads/deployment-view', 'workloads/deployment-api'] };

/** A regex over a relative import path that reaches into `room` (not a room nested in it) from anywhere under src/ (`../engine/x.js`, `../../kube/y.js`). */
function into(room) {
  const inner = Object.keys(ROOMS).filter((r) => r.startsWith(room + '/')).map((r) => r.slice(room.length + 1));
  return String.raw`^(\.\./)+${room}` + (inner.length ? String.raw`(/(?!(${inner.join('|')})(/|$))|$)` : '(/|$)');
}

/** Rooms nested in another (runtime's adapters): a file of the outer room reaches them by `./cri/...`, too. */
function nestedInto(outer, room) {
  return String.raw`^\./${room.slice(outer.length + 1)}(/|$)`;
}

/** Whether two rooms are nested in the same outer room (runtime's adapters), so one reaches the other by `../x/`. */
function siblingOf(a, b) {
  const outer = (r) => (r.includes('/') ? r.slice(0, r.lastIndexOf('/')) : undefined);
  return outer(a) !== undefined && outer(a) === outer(b);
}

/** A regex over a relative import path from a sibling room into `room` (`../docker/x.js` from runtime/cri). */
function siblingInto(room) {
  return String.raw`^\.\./${room.slice(room.lastIndexOf('/') + 1)}(/|$)`;
}

/**
 * Imports a room of src/ must not make (static imports, re-exports and `import()` alike), derived from ROOMS,
 * plus the door rule: a controller reaches a sibling controller, and cli/ a controller, only through the files
 * SIBLING_DOORS and CLI_DOORS name. Each entry: the files, and what they must not import (a regex) with why.
 */
export const LAYER_RULES = Object.entries(ROOMS).map(([room, { may }]) => {
  const nested = Object.keys(ROOMS).filter((r) => r.startsWith(room + '/'));
  const files = [`src/${room}/**/*.ts`, ...nested.map((r) => `!src/${r}/**/*.ts`)];
  const banned = Object.keys(ROOMS)
    .filter((r) => r !== room && !may.includes(r))
    .map((r) => ({
      regex: [into(r), ...(nested.includes(r) ? [nestedInto(room, r)] : []), ...(siblingOf(room, r) ? [siblingInto(r)] : [])].join('|'),
      message: `${room}/ must not import ${r}/: ${room}/ may import only ${may.length ? may.map((m) => m + '/').join(', ') + ' and ' : ''}the foundation (docs/development.md, "Where each part lives").`,
    }));
  // A controller (or cli/) reaches another controller only through the doors named above.
  const doors = room === 'cli' ? CLI_DOORS : room.startsWith('controllers/') ? SIBLING_DOORS : undefined;
  for (const [other, open] of Object.entries(doors ?? {})) {
    if (other === room || !may.includes(other)) continue;
    const base = other.slice(other.lastIndexOf('/') + 1);
    const from = room.startsWith('controllers/') ? String.raw`^(\.\./)+(controllers/)?${base}/` : String.raw`^(\.\./)+${other}/`;
    banned.push({
      regex: `${from}(?!(${open.join('|')})\\.js$)`,
      message: `${room}/ reaches ${other}/ only through its ${open.map((d) => d + '.ts').join(', ')} (docs/development.md, "Rooms").`,
    });
  }
  return { files, banned };
});

/** The config objects enforcing LAYER_RULES: no-restricted-imports, and no-restricted-syntax for `import()`. */
function layerConfigs() {
  return LAYER_RULES.map(({ files, banned }) => ({
    files: files.filter((f) => !f.startsWith('!')),
    ignores: files.filter((f) => f.startsWith('!')).map((f) => f.slice(1)),
    rules: {
      'no-restricted-imports': ['error', { patterns: banned.map((b) => ({ regex: b.regex, message: b.message })) }],
      'no-restricted-syntax': [
        'error',
        ...banned.map((b) => ({ selector: `ImportExpression[source.value=/${b.regex.replace(/\//g, '\\/')}/]`, message: b.message })),
      ],
    },
  }));
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/gen/**', '.sandbox/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.cjs', '**/*.mjs'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs' } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  ...layerConfigs(),
);
