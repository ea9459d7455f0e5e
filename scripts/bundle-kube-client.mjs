#!/usr/bin/env node
// After tsc: replaces dist/src/k8s/client.js (a re-export of @kubernetes/client-node) with one minified ESM
// bundle of the library and its dependencies, so that node loads one module instead of about a thousand (the
// library's own files, one per API and model). The library's code is unchanged; only how it is loaded.
import { build } from 'esbuild';
import { statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'dist', 'src', 'k8s', 'client.js');

await build({
  stdin: { contents: "export * from '@kubernetes/client-node';", resolveDir: root, loader: 'js' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  minify: true,
  legalComments: 'none',
  // The library's CommonJS dependencies call require() (node's built-ins, optional native helpers of ws).
  banner: { js: "import { createRequire as __inplaceRequire } from 'node:module'; const require = __inplaceRequire(import.meta.url);" },
  outfile: out,
  logLevel: 'warning',
});
console.log(`bundle-kube-client: ${path.relative(root, out)} (${(statSync(out).size / 1048576).toFixed(1)} MiB)`);
