// Registry credentials for a prewarm, from the Secrets it names (and only those): kubernetes.io/dockerconfigjson
// (`.dockerconfigjson`) or the older kubernetes.io/dockercfg (`.dockercfg`). Nothing here logs a secret.
import { AgentError } from '../../errors.js';
import { parseAuthConfig } from '../../pull/auth.js';
import type { AuthKeyring } from '../../pull/types.js';
import type { FleetApi } from './fleet-api.js';
import type { SecretRef } from './types.js';

/** One keyring from the named Secrets (later ones win for the same registry); undefined when none is named. */
export async function keyringFromSecrets(api: FleetApi, refs: SecretRef[] | undefined): Promise<AuthKeyring | undefined> {
  if (!refs || refs.length === 0) return undefined;
  const keyring: AuthKeyring = new Map();
  for (const ref of refs) {
    const where = `Secret ${ref.namespace}/${ref.name}`;
    const data = await api.getSecretData(ref.namespace, ref.name);
    if (!data) throw new AgentError('NotFound', `${where} (an imagePullSecret) does not exist`);
    const raw = data['.dockerconfigjson'] ?? data['.dockercfg'];
    if (!raw) throw new AgentError('InvalidArgument', `${where} has no .dockerconfigjson or .dockercfg key`);
    const parsed = parseAuthConfig(Buffer.from(raw, 'base64').toString('utf8'), where);
    for (const [k, v] of parsed) keyring.set(k, v);
  }
  return keyring;
}
