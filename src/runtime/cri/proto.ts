// The CRI package definition (runtime.v1), loaded once through the project's proto loader.
import type { PackageDefinition } from '@grpc/proto-loader';
import { loadProto } from '../../proto.js';

/** Path of our CRI proto below the package's proto/ directory. */
const CRI_PROTO = 'runtime/v1/api.proto';

/** The CRI package definition, loaded on first use with the options the generated types assume. */
export function criPackageDefinition(): PackageDefinition {
  return loadProto(CRI_PROTO);
}
