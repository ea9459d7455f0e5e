#!/usr/bin/env node
// Generates TypeScript types for every .proto under proto/ into src/gen (gitignored), with the same
// options the runtime loader uses (longs as strings, enums as strings, defaults, oneofs), and imports that
// carry `.js` extensions as NodeNext ESM requires.
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const protoDir = path.join(root, 'proto');
const outDir = path.join(root, 'src', 'gen');
const bin = path.join(root, 'node_modules', '.bin', 'proto-loader-gen-types');

/** Every .proto file below dir, as paths relative to the include dir, sorted. */
function protoFiles(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.proto'))
    .map((e) => path.relative(protoDir, path.join(e.parentPath ?? e.path, e.name)))
    .sort();
}

const files = protoFiles(protoDir);
if (files.length === 0) {
  console.error(`gen-types: no .proto files under ${protoDir}`);
  process.exit(1);
}

// The generator names each file's root module after the file's base name: two protos with one base name
// would overwrite each other.
const seen = new Map();
for (const f of files) {
  const base = path.basename(f, '.proto');
  if (seen.has(base)) {
    console.error(`gen-types: ${seen.get(base)} and ${f} would both generate src/gen/${base}.ts; rename one`);
    process.exit(1);
  }
  seen.set(base, f);
}

rmSync(outDir, { recursive: true, force: true });
const args = [
  '--longs=String',
  '--enums=String',
  '--defaults',
  '--oneofs',
  '--grpcLib=@grpc/grpc-js',
  '--importFileExtension=.js',
  `--includeDirs=${protoDir}`,
  `--outDir=${outDir}`,
  ...files,
];
const res = spawnSync(bin, args, { cwd: protoDir, stdio: 'inherit' });
if (res.error) {
  console.error(`gen-types: cannot run ${bin}: ${res.error.message}`);
  process.exit(1);
}
if (res.status !== 0) process.exit(res.status ?? 1);
console.log(`gen-types: ${files.length} proto file(s) -> ${path.relative(root, outDir)}`);
