// Loads the CRI proto once, with the options the generated types in src/gen assume.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';

/** Path of our CRI proto below the package's proto/ directory. */
const CRI_PROTO = 'runtime/v1/api.proto';

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
    if (existsSync(path.join(dir, 'proto', CRI_PROTO))) return path.join(dir, 'proto');
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find proto/${CRI_PROTO} above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

let cached: protoLoader.PackageDefinition | undefined;

/** The CRI package definition (runtime.v1), loaded on first use. */
export function criPackageDefinition(): protoLoader.PackageDefinition {
  cached ??= protoLoader.loadSync(path.join(protoRoot(), CRI_PROTO), {
    ...LOADER_OPTIONS,
    includeDirs: [protoRoot()],
  });
  return cached;
}
