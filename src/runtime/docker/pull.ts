// Pulls one image through `POST /images/create`, following its progress stream.
import type { Readable } from 'node:stream';
import type Dockerode from 'dockerode';
import { MAX_TIMER_MS } from '../../duration.js';
import { AgentError } from '../../errors.js';
import { parseImageRef } from '../../image-ref.js';
import type { PulledImage, PullOptions, RegistryAuth } from '../types.js';
import { dockerError } from './errors.js';
import { PullTracker, type DockerPullMessage } from './pull-progress.js';

/** Splits a reference into the `fromImage` and `tag` (tag or digest) query parameters; tag defaults to latest. */
export function splitReference(ref: string): { repository: string; tag: string; byDigest: boolean } {
  const at = ref.indexOf('@');
  if (at >= 0) return { repository: ref.slice(0, at), tag: ref.slice(at + 1), byDigest: true };
  const colon = ref.lastIndexOf(':');
  if (colon > ref.lastIndexOf('/')) return { repository: ref.slice(0, colon), tag: ref.slice(colon + 1), byDigest: false };
  return { repository: ref, tag: 'latest', byDigest: false };
}


/**
 * The repo digest dockerd stored for ref's repository: `repository@` the stream's `Digest:` line when there
 * was one, else the one of RepoDigests (from image inspect) for that repository, the requested digest first
 * when ref is a digest reference. '' when dockerd tells none; never the request itself.
 */
export function storedDigest(ref: string, streamDigest: string, repoDigests: string[]): string {
  const { repository, tag, byDigest } = splitReference(ref);
  if (streamDigest) return `${repository}@${streamDigest}`;
  const key = (name: string): string => {
    try {
      const r = parseImageRef(name);
      return `${r.registry}/${r.repository}`;
    } catch {
      return name;
    }
  };
  const mine = repoDigests.filter((d) => d.includes('@') && key(d.slice(0, d.indexOf('@'))) === key(repository));
  return (byDigest ? mine.find((d) => d.endsWith(`@${tag}`)) : undefined) ?? mine[0] ?? '';
}

/** The X-Registry-Auth payload for RegistryAuth; a config.json `auth` is decoded, since dockerd does not. */
export function dockerAuth(auth: RegistryAuth): Record<string, string> {
  let { username, password } = auth;
  if (!username && auth.auth) {
    const plain = Buffer.from(auth.auth, 'base64').toString();
    const i = plain.indexOf(':');
    username = i < 0 ? plain : plain.slice(0, i);
    password = i < 0 ? '' : plain.slice(i + 1);
  }
  const out: Record<string, string> = {};
  if (username) out.username = username;
  if (password) out.password = password;
  if (auth.serverAddress) out.serveraddress = auth.serverAddress;
  if (auth.identityToken) out.identitytoken = auth.identityToken;
  if (auth.registryToken) out.registrytoken = auth.registryToken;
  return out;
}

/**
 * Whether a pull stream that ended without dockerd's closing `Status:` line still completed: Podman's Docker
 * API (4.x) sends no `Status:` line and closes with `Download complete` for the pulled image's own id (dockerd
 * only ever reports layer ids there), so that last message together with the stored image is its sign.
 */
export function podmanFinished(last: PullTracker['last'], imageId: string): boolean {
  return last?.status === 'Download complete' && last.id.length >= 12 && imageId.replace(/^sha256:/, '').startsWith(last.id);
}

/** Pulls ref into dockerd's store and returns its image id and the repo digest dockerd stored for it. */
export async function pullImage(
  docker: Dockerode,
  endpoint: string,
  ref: string,
  opts: PullOptions = {},
): Promise<PulledImage> {
  const subject = `image "${ref}"`;
  const { repository, tag } = splitReference(ref);
  const abort = new AbortController();
  let timedOut = false;
  const onAbort = (): void => abort.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) abort.abort();
  const timer =
    opts.timeoutMs !== undefined && opts.timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          abort.abort();
        }, Math.min(opts.timeoutMs, MAX_TIMER_MS))
      : undefined;
  const stopped = (): AgentError | undefined => {
    if (timedOut) return new AgentError('DeadlineExceeded', `pull of ${subject} exceeded ${opts.timeoutMs} ms`);
    if (abort.signal.aborted) return new AgentError('Cancelled', `pull of ${subject} cancelled`);
    return undefined;
  };

  const tracker = new PullTracker();
  const cut = new AgentError('Unavailable', `pull of ${subject}: stream ended early`);
  try {
    const query = { fromImage: repository, tag, abortSignal: abort.signal };
    const stream = (await (opts.auth
      ? docker.createImage(dockerAuth(opts.auth), query)
      : docker.createImage(query)
    ).catch((err: unknown) => {
      throw stopped() ?? dockerError(err, subject, endpoint);
    })) as Readable;
    await new Promise<void>((resolve, reject) => {
      abort.signal.addEventListener('abort', () => stream.destroy(), { once: true });
      docker.modem.followProgress(
        stream,
        (err: Error | null) => {
          const cut = stopped();
          if (cut) reject(cut);
          else if (err) reject(dockerError(err, subject, endpoint));
          // Without the closing line the stream was cut, unless it was Podman's (checked after the inspect).
          else resolve();
        },
        (msg: DockerPullMessage) => {
          try {
            if (tracker.apply(msg, ref)) opts.onProgress?.(tracker.snapshot());
          } catch (err) {
            reject(err);
            stream.destroy();
          }
        },
      );
    });
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }

  let info: Dockerode.ImageInspectInfo;
  try {
    info = await docker.getImage(ref).inspect();
  } catch (err) {
    throw tracker.finished ? dockerError(err, subject, endpoint) : cut;
  }
  if (!tracker.finished && !podmanFinished(tracker.last, info.Id)) throw cut;
  return { id: info.Id, digest: storedDigest(ref, tracker.digest, info.RepoDigests ?? []) };
}
