// Lint setup: typescript-eslint's recommended rules over src, test, bench and scripts, and the layering of
// src/ (docs/development.md): imports that would run against the direction of the layers fail the lint.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** An adapter folder of src/runtime: only the daemon's wiring (runtime-factories.ts) may name one. */
const ADAPTER = String.raw`(^|/)runtime/(containerd|cri|docker)(/|$)`;

/**
 * Imports a directory of src/ must not make: static imports, re-exports and `import()` alike.
 * Each entry: the files, and what they must not import (a regex over the import path) with why.
 */
export const LAYER_RULES = [
  {
    files: ['src/pull/**/*.ts'],
    banned: [{ regex: ADAPTER, message: 'pull/ must not import a runtime adapter: it uses the Runtime interface, and the daemon wires adapters (daemon/runtime-factories.ts).' }],
  },
  {
    files: ['src/cli/**/*.ts'],
    banned: [
      { regex: String.raw`(^|/)engine(/|$)`, message: 'cli/ must not import engine/: the client speaks the API\'s types (src/api/operation-states.ts, src/api/convert.ts).' },
      { regex: String.raw`(^|/)runtime(/|$)`, message: 'cli/ must not import runtime/: the client speaks the API\'s types; shared values live at the bottom of src/.' },
    ],
  },
  {
    files: ['src/engine/**/*.ts'],
    banned: [
      { regex: String.raw`(^|/)kube(/|$)`, message: 'engine/ must not import kube/: Kubernetes mode plugs into the engine as a strategy, wired by the daemon.' },
      { regex: ADAPTER, message: 'engine/ must not import a runtime adapter: it drives the Runtime interface (runtime/runtime.ts).' },
    ],
  },
];

/** The config objects enforcing LAYER_RULES: no-restricted-imports, and no-restricted-syntax for `import()`. */
function layerConfigs() {
  return LAYER_RULES.map(({ files, banned }) => ({
    files,
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
