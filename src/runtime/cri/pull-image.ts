// Pulling an image over CRI. PullImage is one unary call with no progress; the image id and repo digest are
// read back with ImageStatus afterwards.
import { AgentError } from '../../errors.js';
import type { AuthConfig } from '../../gen/runtime/v1/AuthConfig.js';
import { parseImageRef } from '../../image-ref.js';
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

/**
 * The repo digest the runtime stored for ref's repository, among repoDigests (from ImageStatus); for a
 * digest reference the requested one when it is among them, so that the caller can verify it. '' when none
 * belongs to that repository.
 */
export function digestFor(ref: string, repoDigests: string[]): string {
  let r;
  try {
    r = parseImageRef(ref);
  } catch {
    return repoDigests[0] ?? '';
  }
  const repo = `${r.registry}/${r.repository}`;
  const mine = repoDigests.filter((d) => {
    try {
      const p = parseImageRef(d);
      return p.digest !== undefined && `${p.registry}/${p.repository}` === repo;
    } catch {
      return false;
    }
  });
  return (r.digest ? mine.find((d) => d.endsWith(`@${r.digest}`)) : undefined) ?? mine[0] ?? '';
}

/** Pulls ref into the runtime's store and returns its id and the repo digest the runtime stored for it. */
export async function pullImage(client: CriClient, ref: string, opts: PullOptions = {}): Promise<PulledImage> {
  const callOpts = { timeoutMs: opts.timeoutMs ?? 0, signal: opts.signal };
  const imageRef = await client.pullImage({ image: { image: ref }, auth: opts.auth ? toAuthConfig(opts.auth) : null }, callOpts);
  // By the image the runtime says it pulled (its id), so that the digests are what it stored, not a lookup
  // of the requested name.
  let { image } = imageRef ? await client.imageStatus(imageRef).catch(() => ({ image: null })) : { image: null };
  if (!image) ({ image } = await client.imageStatus(ref));
  if (!image) throw new AgentError('Internal', `image "${ref}" was pulled (${imageRef}) but the runtime does not list it`);
  return { id: image.id || imageRef, digest: digestFor(ref, image.repoDigests) };
}
