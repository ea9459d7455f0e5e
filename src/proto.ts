// Loading the project's .proto files with the options the generated types in src/gen assume.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';

/** Loader options shared with scripts/gen-types.mjs: changing one means changing the other. */
export const LOADER_OPTIONS: protoLoader.Options = {
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** The package's proto/ directory, found by walking up from this module (works from src/ and dist/src/). */
export function protoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'proto', 'inplace'))) return path.join(dir, 'proto');
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find the proto/ directory above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

const cache = new Map<string, protoLoader.PackageDefinition>();

/** The package definition of one .proto file (path relative to proto/), loaded once. */
export function loadProto(file: string): protoLoader.PackageDefinition {
  let def = cache.get(file);
  if (!def) {
    def = protoLoader.loadSync(path.join(protoRoot(), file), { ...LOADER_OPTIONS, includeDirs: [protoRoot()] });
    cache.set(file, def);
  }
  return def;
}

/** The .proto files loaded so far by this process (paths relative to proto/), in load order. */
export function loadedProtoFiles(): string[] {
  return [...cache.keys()];
}
