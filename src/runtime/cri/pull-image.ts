// Pulling an image over CRI. PullImage is one unary call with no progress; the image id and repo digest are
// read back with ImageStatus afterwards.
import { AgentError } from '../../errors.js';
import type { AuthConfig } from '../../gen/runtime/v1/AuthConfig.js';
import { parseImageRef } from '../image-ref.js';
import type { PulledImage, PullOptions, RegistryAuth } from '../types.js';
import type { CriClient } from './client.js';

/** The CRI AuthConfig of registry credentials. */
export function toAuthConfig(auth: RegistryAuth): AuthConfig {
  return {
    username: auth.username ?? '',
    password: auth.password ?? '',
    auth: auth.auth ?? '',
    serverAddress: auth.serverAddress ?? '',
    identityToken: auth.identityToken ?? '',
    registryToken: auth.registryToken ?? '',
  };
}

/** The repo digest among repoDigests that belongs to ref's repository; '' when none does. */
export function digestFor(ref: string, repoDigests: string[]): string {
  let name: string;
  try {
    const r = parseImageRef(ref);
    if (r.digest) return `${r.registry}/${r.repository}@${r.digest}`;
    name = `${r.registry}/${r.repository}`;
  } catch {
    return repoDigests[0] ?? '';
  }
  return repoDigests.find((d) => d.startsWith(`${name}@`)) ?? repoDigests.find((d) => d.split('@')[0].endsWith(name)) ?? '';
}

/** Pulls ref into the runtime's store and returns its id and repo digest. */
export async function pullImage(client: CriClient, ref: string, opts: PullOptions = {}): Promise<PulledImage> {
  const callOpts = { timeoutMs: opts.timeoutMs ?? 0, signal: opts.signal };
  const imageRef = await client.pullImage({ image: { image: ref }, auth: opts.auth ? toAuthConfig(opts.auth) : null }, callOpts);
  const { image } = await client.imageStatus(ref);
  if (!image) throw new AgentError('Internal', `image "${ref}" was pulled (${imageRef}) but the runtime does not list it`);
  return { id: image.id || imageRef, digest: digestFor(ref, image.repoDigests) };
}
